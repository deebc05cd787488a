package policy

// Kind is what a rule restricts: MCP's tools, prompts or resources. Each kind has its own
// rules (Config.Rules, PromptRules, ResourceRules: tool_rules, prompt_rules and
// resource_rules in the configuration file), its own selector key and its own CEL variable
// naming the item: tool, prompt or uri.
type Kind int

// The kinds, in the order of Config's lists.
const (
	KindTool Kind = iota
	KindPrompt
	KindResource
	Kinds // how many kinds there are
)

// kindNames are, per kind: the configuration key of its rules, a rule's selector key, the
// CEL variable naming the item, and the noun for messages.
var kindNames = [Kinds]struct{ key, selector, variable, noun string }{
	KindTool:     {"tool_rules", "tools", "tool", "tool"},
	KindPrompt:   {"prompt_rules", "prompts", "prompt", "prompt"},
	KindResource: {"resource_rules", "uris", "uri", "resource"},
}

// String is the kind's noun: "tool", "prompt" or "resource".
func (k Kind) String() string { return kindNames[k].noun }

// RulesKind is the kind whose rules the configuration key names (tool_rules, prompt_rules,
// resource_rules); false for any other key.
func RulesKind(key string) (Kind, bool) {
	for k := range Kinds {
		if kindNames[k].key == key {
			return k, true
		}
	}
	return 0, false
}
