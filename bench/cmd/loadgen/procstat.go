package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// clockTicks is USER_HZ, 100 on every Linux this runs on.
const clockTicks = 100

// cpuSeconds is utime+stime of the process, in seconds.
func cpuSeconds(pid int) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name may hold spaces; fields count from after its closing parenthesis.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("unreadable /proc/%d/stat", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state); utime is field 14, stime field 15.
	if len(f) < 13 {
		return 0, fmt.Errorf("short /proc/%d/stat", pid)
	}
	u, err1 := strconv.ParseFloat(f[11], 64)
	s, err2 := strconv.ParseFloat(f[12], 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("unreadable /proc/%d/stat times", pid)
	}
	return (u + s) / clockTicks, nil
}

// statusKiB reads a "VmXxx:   123 kB" line of /proc/<pid>/status.
func statusKiB(pid int, key string) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, key+":"); ok {
			return strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		}
	}
	return 0, fmt.Errorf("%s not in /proc/%d/status", key, pid)
}

// openFDs counts the descriptors the process holds (the entries of /proc/<pid>/fd): an idle
// session's cost in descriptors is its gain over a baseline, as its memory is.
func openFDs(pid int) (int, error) {
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return 0, err
	}
	return len(ents), nil
}

// descendants lists the processes under pid: its children, theirs, and so on, from the
// children file of each of its threads (/proc/PID/task/TID/children, which lists the
// children that thread started). A process that ends between the reads is missed.
func descendants(pid int) []int {
	var out []int
	seen := map[int]bool{pid: true}
	for queue := []int{pid}; len(queue) > 0; queue = queue[1:] {
		tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", queue[0]))
		for _, t := range tasks {
			b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/children", queue[0], t.Name()))
			for _, f := range strings.Fields(string(b)) {
				if c, err := strconv.Atoi(f); err == nil && !seen[c] {
					seen[c] = true
					out = append(out, c)
					queue = append(queue, c)
				}
			}
		}
	}
	return out
}

// treeCPU is the CPU seconds of each process under pid (not pid's own).
func treeCPU(pid int) map[int]float64 {
	m := map[int]float64{}
	for _, c := range descendants(pid) {
		if v, err := cpuSeconds(c); err == nil {
			m[c] = v
		}
	}
	return m
}

// treeCPUSince is the CPU the processes under pid used since before, a treeCPU of the
// same pid: a process that started since counts from zero, one that ended since is lost
// (its time goes to its parent's children's time only once it is reaped).
func treeCPUSince(pid int, before map[int]float64) float64 {
	var sum float64
	for c, v := range treeCPU(pid) {
		sum += v - before[c]
	}
	return sum
}

// busyCPUSeconds is the machine's CPU time spent on anything but idle and I/O wait, summed
// over all its CPUs, from the first line of /proc/stat, and the number of CPUs it lists.
func busyCPUSeconds() (busy float64, cpus int, err error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0, err
	}
	lines := strings.Split(string(b), "\n")
	f := strings.Fields(lines[0])
	// cpu user nice system idle iowait irq softirq steal guest guest_nice; guest time is
	// counted in user already.
	if len(f) < 9 || f[0] != "cpu" {
		return 0, 0, errors.New("unreadable /proc/stat")
	}
	for i, v := range f[1:9] {
		if i == 3 || i == 4 { // idle, iowait
			continue
		}
		n, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return 0, 0, errors.New("unreadable /proc/stat")
		}
		busy += n
	}
	for _, l := range lines[1:] {
		if strings.HasPrefix(l, "cpu") {
			cpus++
		}
	}
	return busy / clockTicks, cpus, nil
}
