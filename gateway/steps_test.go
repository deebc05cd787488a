package gateway

import (
	"reflect"
	"testing"
)

// Every step the 2026-07-28 adapter takes is given: a step left out would compile (Steps is a
// struct of funcs) and panic on the first request that needs it.
func TestSessionlessStepsAreAllGiven(t *testing.T) {
	f := newFixture(t)
	v := reflect.ValueOf(f.gw.sessionlessSteps())
	for i := range v.NumField() {
		if v.Field(i).IsNil() {
			t.Errorf("sessionless.Steps.%s is not given", v.Type().Field(i).Name)
		}
	}
}
