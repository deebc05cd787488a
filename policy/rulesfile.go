package policy

import (
	"errors"
	"fmt"

	"gopkg.in/yaml.v3"
)

// RulesFromYAML reads rules of kind k as a config file writes them: a list of mappings with
// the keys name, the kind's selector (a list: tools, prompts or uris), scope and allow. An
// unknown or repeated key is refused, so that a misspelt "tools" does not quietly make a
// rule apply to every tool.
func RulesFromYAML(k Kind, n *yaml.Node) ([]Rule, error) {
	sel := kindNames[k].selector
	keys := "name, " + sel + ", scope, allow"
	if n.Kind != yaml.SequenceNode {
		return nil, fmt.Errorf("line %d: a list of rules, each a mapping (%s)", n.Line, keys)
	}
	rules := make([]Rule, len(n.Content))
	for i, m := range n.Content {
		if m.Kind != yaml.MappingNode {
			return nil, fmt.Errorf("line %d: rule %d is not a mapping (%s)", m.Line, i, keys)
		}
		selector := [Kinds]*[]string{&rules[i].Tools, &rules[i].Prompts, &rules[i].URIs}[k]
		seen := map[string]bool{}
		for j := 0; j+1 < len(m.Content); j += 2 {
			key, v := m.Content[j].Value, m.Content[j+1]
			var err error
			switch {
			case seen[key]:
				err = fmt.Errorf("is set twice")
			case key == "name":
				err = decodePlain(v, &rules[i].Name)
			case key == sel:
				err = decodePlain(v, selector)
			case key == "scope":
				err = decodePlain(v, &rules[i].Scope)
			case key == "allow":
				err = decodePlain(v, &rules[i].Allow)
			default:
				err = fmt.Errorf("is not one of %s", keys)
			}
			if err != nil {
				return nil, fmt.Errorf("line %d: rule %d, key %q: %v", m.Content[j].Line, i, key, err)
			}
			seen[key] = true
		}
	}
	return rules, nil
}

// decodePlain decodes v into out, refusing a value, or an entry of a list, that is null or a
// scalar of another YAML type than a plain value, as a setting's is: Decode would take a null
// for a key left out (a rule meant to need a scope and a claim would need one) and a !!binary
// for its bytes. What else a value may be, Decode says.
func decodePlain(v *yaml.Node, out any) error {
	values := []*yaml.Node{v}
	if v.Kind == yaml.AliasNode {
		values[0] = v.Alias
	}
	if values[0].Kind == yaml.SequenceNode {
		values = values[0].Content
	}
	for _, e := range values {
		if e.Kind == yaml.AliasNode {
			e = e.Alias
		}
		if e.Kind != yaml.ScalarNode {
			continue
		}
		switch e.ShortTag() {
		case "!!str", "!!int", "!!float", "!!bool", "!!timestamp":
		case "!!null":
			return errors.New("is empty (null); write its value, or leave the key out")
		default:
			return fmt.Errorf("has the YAML type %s, not a plain value", e.ShortTag())
		}
	}
	return v.Decode(out)
}
