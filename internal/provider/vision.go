package provider

import (
	"regexp"
	"strings"
)

// visionRule is one model family, recognised by a pattern on the
// normalised name (normalizeModel), and whether it reads images.
type visionRule struct {
	family string
	re     *regexp.Regexp
	images bool
}

// visionRules are tried in order, the first match wins: a vision variant is
// listed before its text-only family (deepseek-vl before deepseek), and an
// exception before its family (o1-mini before o1, gemma3:1b before gemma3).
// Sources: each vendor's model pages (OpenAI "Models", Anthropic "Vision",
// Google "Image understanding", Qwen, Zhipu, Mistral, Meta model cards,
// Ollama's "vision" library).
var visionRules = []visionRule{
	// Never images, whatever the family: embeddings, speech, image output.
	{"embedding, speech or image-output model", re(`embed|whisper|tts|transcribe|audio|dall-e|gpt-image|moderation|rerank`), false},

	// OpenAI.
	{"o1-mini, o1-preview, o3-mini (text only)", re(`^o(1-mini|1-preview|3-mini)`), false},
	{"OpenAI o-series", re(`^o[134](-|$)`), true},
	{"gpt-oss (text only)", re(`^gpt-oss`), false},
	{"gpt-4o / chatgpt-4o", re(`^(chat)?gpt-4o`), true},
	{"gpt-4.1 / gpt-4.5 / gpt-5", re(`^gpt-(4\.[15]|5)`), true},
	{"gpt-4 turbo / vision", re(`^gpt-4-turbo($|-2024)|^gpt-4-(\d{4}-)?vision`), true},
	{"gpt-4 / gpt-3.5 (text only)", re(`^gpt-(4|3\.5)`), false},

	// Anthropic: Claude 3 and later read images; Claude 1, 2 and Instant
	// do not.
	{"Claude 1, 2, Instant (text only)", re(`claude-(1|2|instant)`), false},
	{"Claude 3+", re(`claude`), true},

	// Google.
	{"Gemma 3 1B / 270M (text only)", re(`gemma-?3[-:_](1b|270m)`), false},
	{"Gemma 3", re(`gemma-?3`), true},
	{"Gemini 1.0 Pro (text only)", re(`^gemini-(1\.0-pro|pro)$|^gemini-1\.0-pro-0`), false},
	{"Gemini", re(`gemini`), true},
	{"PaliGemma", re(`paligemma`), true},

	// Qwen: the VL, QVQ and Omni lines.
	{"Qwen-VL / QVQ / Qwen-Omni", re(`qwen[0-9.]*-?(vl|omni)|^qvq`), true},

	// Zhipu: GLM-4V, GLM-4.1V, GLM-4.5V, GLM-4.6V.
	{"GLM-V", re(`glm-?4(\.\d+)?v`), true},

	// Mistral: Pixtral; Mistral Small 3.1 and later (2503, 2506);
	// Mistral Medium 3 (2505, 2508); "latest" names are those.
	{"Pixtral", re(`pixtral`), true},
	{"Mistral Small 3.1+", re(`mistral-small-?(3\.[1-9]|2503|2506|latest)|mistral-small-3-[1-9]`), true},
	{"Mistral Medium 3", re(`mistral-medium-?(3|2505|2508|latest)`), true},

	// Meta: Llama 4 (Scout, Maverick), Llama 3.2 Vision.
	{"Llama 4", re(`llama-?4`), true},
	{"Llama 3.2 Vision", re(`llama-?3\.2.*vision`), true},

	// Open vision models, mostly run locally.
	{"LLaVA family", re(`llava`), true}, // llava, llava-phi3, llava-llama3, bakllava
	{"MiniCPM-V", re(`minicpm-?(v|o)`), true},
	{"Moondream", re(`moondream`), true},
	{"InternVL", re(`internvl`), true},
	{"Granite Vision", re(`granite.*vision`), true},
	{"Phi vision / multimodal", re(`phi-?[34](\.5)?-(vision|multimodal)`), true},
	{"SmolVLM / Idefics", re(`smolvlm|idefics`), true},
	{"Grok vision", re(`grok-(2-vision|vision|4)`), true},
	{"a vision model by name", re(`vision|(^|[^a-z])vlm?([^a-z]|$)`), true}, // deepseek-vl2, kimi-vl

	// Text-only families a user is likely to configure.
	{"DeepSeek (text only)", re(`deepseek`), false},
	{"Qwen (text only)", re(`^qwen|^qwq`), false},
	{"GLM (text only)", re(`^glm|chatglm`), false},
	{"Llama (text only)", re(`llama`), false},
	{"Mistral (text only)", re(`mistral|mixtral|codestral|devstral|ministral|magistral`), false},
	{"Gemma (text only)", re(`gemma`), false},
	{"Phi (text only)", re(`^phi`), false},
	{"Kimi K2 (text only)", re(`kimi-k2`), false},
}

func re(s string) *regexp.Regexp { return regexp.MustCompile(s) }

// ReadsImages tells whether model reads images, by its family: yes is the
// answer, known is false when the family is not one this table knows (the
// caller then keeps images off unless the endpoint or the configuration
// says otherwise). Provider prefixes ("openai/gpt-4o", "ollama:
// qwen2.5vl:7b", "us.anthropic.claude-3-5-sonnet-v1:0"), Ollama tags and
// case do not matter.
func ReadsImages(model string) (yes, known bool) {
	r := visionFamily(model)
	if r == nil {
		return false, false
	}
	return r.images, true
}

// visionFamily is the first rule matching model, or nil.
func visionFamily(model string) *visionRule {
	n := normalizeModel(model)
	if n == "" {
		return nil
	}
	for i := range visionRules {
		if visionRules[i].re.MatchString(n) {
			return &visionRules[i]
		}
	}
	return nil
}

// normalizeModel lowercases model and drops what says where it runs rather
// than what it is: a "provider: " prefix, path segments ("openai/",
// "accounts/fireworks/models/"), a dotted vendor prefix ("us.anthropic.")
// and OpenRouter's ":free"-style suffixes. An Ollama tag (":7b") is kept:
// "gemma3:1b" is not "gemma3".
func normalizeModel(model string) string {
	n := strings.ToLower(strings.TrimSpace(model))
	if i := strings.LastIndex(n, ": "); i >= 0 {
		n = strings.TrimSpace(n[i+2:])
	}
	if i := strings.LastIndexByte(n, '/'); i >= 0 {
		n = n[i+1:]
	}
	for _, vendor := range []string{"anthropic.", "meta.", "mistral.", "google.", "openai.", "qwen.", "amazon."} {
		if i := strings.Index(n, vendor); i >= 0 && i <= 3 { // "anthropic." or "us.anthropic."
			n = n[i+len(vendor):]
			break
		}
	}
	for _, suffix := range []string{":free", ":beta", ":extended", ":thinking", ":online", ":nitro", ":floor", ":latest"} {
		n = strings.TrimSuffix(n, suffix)
	}
	return n
}
