package worker

import (
	"os"
	"syscall"
	"testing"
)

func TestProcessGroup(t *testing.T) {
	if got, want := processGroup(os.Getpid()), syscall.Getpgrp(); got != want {
		t.Errorf("processGroup(self) = %d, want %d", got, want)
	}
	if got := processGroup(-5); got != -1 {
		t.Errorf("processGroup of no process = %d, want -1", got)
	}
}
