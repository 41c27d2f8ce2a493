package provider

import (
	"regexp"
	"strings"
	"sync"
)

// visionRule is one model family, recognised by a pattern on the
// normalised name (normalizeModel), and whether it reads images.
type visionRule struct {
	family  string
	pattern string
	images  bool
	re      *regexp.Regexp
}

// visionRules are tried in order, the first match wins: a vision variant is
// listed before its text-only family (deepseek-vl before deepseek), and an
// exception before its family (o1-mini before o1, gemma3:1b before gemma3).
// Sources: each vendor's model pages (OpenAI "Models", Anthropic "Vision",
// Google "Image understanding", Qwen, Zhipu, Mistral, Meta model cards,
// Ollama's "vision" library).
// visionRules is compiled on first use: package initialisers run before
// initialize is answered (TestStartupInitCost).
var visionRules = sync.OnceValue(func() []visionRule {
	rules := visionTable
	for i := range rules {
		rules[i].re = regexp.MustCompile(rules[i].pattern)
	}
	return rules
})

var visionTable = []visionRule{
	// Never images, whatever the family: embeddings, speech, image output.
	{"embedding, speech or image-output model", `embed|whisper|tts|transcribe|audio|dall-e|gpt-image|moderation|rerank`, false, nil},

	// OpenAI.
	{"o1-mini, o1-preview, o3-mini (text only)", `^o(1-mini|1-preview|3-mini)`, false, nil},
	{"OpenAI o-series", `^o[134](-|$)`, true, nil},
	{"gpt-oss (text only)", `^gpt-oss`, false, nil},
	{"gpt-4o / chatgpt-4o", `^(chat)?gpt-4o`, true, nil},
	{"gpt-4.1 / gpt-4.5 / gpt-5", `^gpt-(4\.[15]|5)`, true, nil},
	{"gpt-4 turbo / vision", `^gpt-4-turbo($|-2024)|^gpt-4-(\d{4}-)?vision`, true, nil},
	{"gpt-4 / gpt-3.5 (text only)", `^gpt-(4|3\.5)`, false, nil},

	// Anthropic: Claude 3 and later read images; Claude 1, 2 and Instant
	// do not.
	{"Claude 1, 2, Instant (text only)", `claude-(1|2|instant)`, false, nil},
	{"Claude 3+", `claude`, true, nil},

	// Google.
	{"Gemma 3 1B / 270M (text only)", `gemma-?3[-:_](1b|270m)`, false, nil},
	{"Gemma 3", `gemma-?3`, true, nil},
	{"Gemini 1.0 Pro (text only)", `^gemini-(1\.0-pro|pro)$|^gemini-1\.0-pro-0`, false, nil},
	{"Gemini", `gemini`, true, nil},
	{"PaliGemma", `paligemma`, true, nil},

	// Qwen: the VL, QVQ and Omni lines.
	{"Qwen-VL / QVQ / Qwen-Omni", `qwen[0-9.]*-?(vl|omni)|^qvq`, true, nil},

	// Zhipu: GLM-4V, GLM-4.1V, GLM-4.5V, GLM-4.6V.
	{"GLM-V", `glm-?4(\.\d+)?v`, true, nil},

	// Mistral: Pixtral; Mistral Small 3.1 and later (2503, 2506);
	// Mistral Medium 3 (2505, 2508); "latest" names are those.
	{"Pixtral", `pixtral`, true, nil},
	{"Mistral Small 3.1+", `mistral-small-?(3\.[1-9]|2503|2506|latest)|mistral-small-3-[1-9]`, true, nil},
	{"Mistral Medium 3", `mistral-medium-?(3|2505|2508|latest)`, true, nil},

	// Meta: Llama 4 (Scout, Maverick), Llama 3.2 Vision.
	{"Llama 4", `llama-?4`, true, nil},
	{"Llama 3.2 Vision", `llama-?3\.2.*vision`, true, nil},

	// Open vision models, mostly run locally.
	{"LLaVA family", `llava`, true, nil}, // llava, llava-phi3, llava-llama3, bakllava
	{"MiniCPM-V", `minicpm-?(v|o)`, true, nil},
	{"Moondream", `moondream`, true, nil},
	{"InternVL", `internvl`, true, nil},
	{"Granite Vision", `granite.*vision`, true, nil},
	{"Phi vision / multimodal", `phi-?[34](\.5)?-(vision|multimodal)`, true, nil},
	{"SmolVLM / Idefics", `smolvlm|idefics`, true, nil},
	{"Grok vision", `grok-(2-vision|vision|4)`, true, nil},
	{"a vision model by name", `vision|(^|[^a-z])vlm?([^a-z]|$)`, true, nil}, // deepseek-vl2, kimi-vl

	// Text-only families a user is likely to configure.
	{"DeepSeek (text only)", `deepseek`, false, nil},
	{"Qwen (text only)", `^qwen|^qwq`, false, nil},
	{"GLM (text only)", `^glm|chatglm`, false, nil},
	{"Llama (text only)", `llama`, false, nil},
	{"Mistral (text only)", `mistral|mixtral|codestral|devstral|ministral|magistral`, false, nil},
	{"Gemma (text only)", `gemma`, false, nil},
	{"Phi (text only)", `^phi`, false, nil},
	{"Kimi K2 (text only)", `kimi-k2`, false, nil},
}

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
	rules := visionRules()
	for i := range rules {
		if rules[i].re.MatchString(n) {
			return &rules[i]
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
