package policy

import (
	"fmt"

	"gopkg.in/yaml.v3"
)

// RulesFromYAML reads rules as a config file writes them: a list of mappings with the keys
// name, tools (a list), scope and allow. An unknown or repeated key is refused, so that a
// misspelt "tools" does not quietly make a rule apply to every tool.
func RulesFromYAML(n *yaml.Node) ([]Rule, error) {
	if n.Kind != yaml.SequenceNode {
		return nil, fmt.Errorf("line %d: a list of rules, each a mapping (name, tools, scope, allow)", n.Line)
	}
	rules := make([]Rule, len(n.Content))
	for i, m := range n.Content {
		if m.Kind != yaml.MappingNode {
			return nil, fmt.Errorf("line %d: rule %d is not a mapping (name, tools, scope, allow)", m.Line, i)
		}
		seen := map[string]bool{}
		for j := 0; j+1 < len(m.Content); j += 2 {
			k, v := m.Content[j].Value, m.Content[j+1]
			var err error
			switch {
			case seen[k]:
				err = fmt.Errorf("is set twice")
			case k == "name":
				err = v.Decode(&rules[i].Name)
			case k == "tools":
				err = v.Decode(&rules[i].Tools)
			case k == "scope":
				err = v.Decode(&rules[i].Scope)
			case k == "allow":
				err = v.Decode(&rules[i].Allow)
			default:
				err = fmt.Errorf("is not one of name, tools, scope, allow")
			}
			if err != nil {
				return nil, fmt.Errorf("line %d: rule %d, key %q: %v", m.Content[j].Line, i, k, err)
			}
			seen[k] = true
		}
	}
	return rules, nil
}
