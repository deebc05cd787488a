package pool

import "testing"

// What the pool learns of its worker program: a yes sticks (a later no is one worker's
// trouble), a first no gives way to a yes.
func TestEraKnowledge(t *testing.T) {
	tests := []struct {
		name        string
		learn       []bool
		known, want bool
	}{
		{"nothing yet", nil, false, false},
		{"yes", []bool{true}, true, true},
		{"no", []bool{false}, true, false},
		{"yes, then one worker says no", []bool{true, false}, true, true},
		{"no, then a worker shows yes", []bool{false, true}, true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &Pool{}
			for _, v := range tt.learn {
				p.learnEra(v)
			}
			if known, yes := p.SessionlessWorkers(); known != tt.known || yes != tt.want {
				t.Errorf("SessionlessWorkers() = %v, %v; want %v, %v", known, yes, tt.known, tt.want)
			}
		})
	}
}
