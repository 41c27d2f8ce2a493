package provider

import "testing"

// TestReadsImages: the families that read images are recognised under the
// names users and providers give them; text-only names are not.
func TestReadsImages(t *testing.T) {
	cases := []struct {
		model      string
		yes, known bool
	}{
		// OpenAI.
		{"gpt-4o", true, true},
		{"gpt-4o-mini", true, true},
		{"openai/gpt-4o", true, true},
		{"chatgpt-4o-latest", true, true},
		{"gpt-4.1-nano", true, true},
		{"gpt-4.5-preview", true, true},
		{"gpt-5", true, true},
		{"openai/gpt-5-mini", true, true},
		{"gpt-4-turbo", true, true},
		{"gpt-4-turbo-2024-04-09", true, true},
		{"gpt-4-vision-preview", true, true},
		{"o1", true, true},
		{"o1-pro", true, true},
		{"o3", true, true},
		{"o4-mini", true, true},
		{"o1-mini", false, true},
		{"o1-preview", false, true},
		{"o3-mini", false, true},
		{"o3-mini-high", false, true},
		{"gpt-3.5-turbo", false, true},
		{"gpt-4", false, true},
		{"gpt-4-0613", false, true},
		{"gpt-4-turbo-preview", false, true},
		{"gpt-oss-120b", false, true},
		{"openai/gpt-oss-20b:free", false, true},
		{"text-embedding-3-small", false, true},
		{"gpt-4o-mini-tts", false, true},
		{"gpt-4o-audio-preview", false, true},
		// Anthropic.
		{"claude-3-opus-20240229", true, true},
		{"claude-3-5-sonnet-latest", true, true},
		{"claude-sonnet-4-5", true, true},
		{"anthropic/claude-opus-4.1", true, true},
		{"us.anthropic.claude-3-7-sonnet-20250219-v1:0", true, true},
		{"claude-2.1", false, true},
		{"claude-instant-1.2", false, true},
		// Google.
		{"gemini-2.5-pro", true, true},
		{"google/gemini-2.0-flash-001", true, true},
		{"gemini-1.5-flash", true, true},
		{"gemini-pro", false, true},
		{"gemini-pro-vision", true, true},
		{"gemma3", true, true},
		{"gemma3:27b", true, true},
		{"google/gemma-3-12b-it", true, true},
		{"gemma-3n-e4b-it", true, true},
		{"gemma3:1b", false, true},
		{"gemma-3-1b-it", false, true},
		{"gemma2:9b", false, true},
		// Qwen.
		{"qwen2.5vl:7b", true, true},
		{"ollama: qwen2.5vl:7b", true, true},
		{"Qwen/Qwen2.5-VL-72B-Instruct", true, true},
		{"qwen-vl-max", true, true},
		{"qwen3-vl-235b-a22b-instruct", true, true},
		{"qvq-max", true, true},
		{"qwen2.5-omni-7b", true, true},
		{"qwen2.5-coder:32b", false, true},
		{"Qwen/Qwen3-8B", false, true},
		{"qwq-32b", false, true},
		// Zhipu.
		{"glm-4v-plus", true, true},
		{"glm-4.5v", true, true},
		{"z-ai/glm-4.1v-9b-thinking", true, true},
		{"glm-4.5", false, true},
		{"glm-4.6", false, true},
		// Mistral.
		{"pixtral-12b-2409", true, true},
		{"pixtral-large-latest", true, true},
		{"mistral-small-latest", true, true},
		{"mistral-small-2503", true, true},
		{"mistral-small3.1", true, true},
		{"mistralai/mistral-small-3.2-24b-instruct", true, true},
		{"mistral-medium-2505", true, true},
		{"mistral-medium-3", true, true},
		{"mistral-small-2501", false, true},
		{"mistral-medium-2312", false, true},
		{"mistral-large-2411", false, true},
		{"codestral-latest", false, true},
		// Meta.
		{"meta-llama/llama-4-scout", true, true},
		{"llama4:maverick", true, true},
		{"accounts/fireworks/models/llama4-maverick-instruct-basic", true, true},
		{"llama3.2-vision:11b", true, true},
		{"meta-llama/Llama-3.2-90B-Vision-Instruct", true, true},
		{"llama3.1", false, true},
		{"llama3.1:8b", false, true},
		{"llama-3.3-70b-versatile", false, true},
		{"llama3.2:3b", false, true},
		// Open vision models.
		{"llava:13b", true, true},
		{"llava-phi3", true, true},
		{"bakllava", true, true},
		{"minicpm-v:8b", true, true},
		{"moondream", true, true},
		{"granite3.2-vision", true, true},
		{"deepseek-vl2", true, true},
		{"moonshotai/kimi-vl-a3b-thinking", true, true},
		{"OpenGVLab/InternVL3-8B", true, true},
		{"phi-3.5-vision-instruct", true, true},
		// Text only.
		{"deepseek-chat", false, true},
		{"deepseek-reasoner", false, true},
		{"deepseek/deepseek-r1:free", false, true},
		{"phi4", false, true},
		{"moonshotai/kimi-k2-instruct", false, true},
		{"nomic-embed-text", false, true},
		// Unknown.
		{"my-finetune", false, false},
		{"", false, false},
		{"  ", false, false},
		{"fakemodel", false, false},
	}
	for _, c := range cases {
		yes, known := ReadsImages(c.model)
		if yes != c.yes || known != c.known {
			r := visionFamily(c.model)
			fam := "<none>"
			if r != nil {
				fam = r.family
			}
			t.Errorf("ReadsImages(%q) = %v, %v (family %s); want %v, %v", c.model, yes, known, fam, c.yes, c.known)
		}
	}
}
