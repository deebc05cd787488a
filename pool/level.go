package pool

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"

	"github.com/gemgate/gemgate/jsonrpc"
)

// setLevelLocked sets the worker to the most verbose logging level any of its callers asked
// for; when that leaves the worker's level as it is, gemgate answers. A level gemgate cannot
// read is refused here, never passed on: a worker that reads it leniently (params.Level, a
// name in capitals) would change the level the user's sessions share behind w.level.
func (w *wrk) setLevelLocked(c *Call) *jsonrpc.Message {
	level := LogLevel(levelName(c.out.Params))
	if level < 0 {
		return jsonrpc.ErrorResponse(c.out.ID, jsonrpc.CodeInvalidParams,
			"logging/setLevel needs params.level, one of "+LogLevels(), nil)
	}
	w.levels[c.m] = level
	most := w.mostVerboseLocked()
	if w.level >= 0 && most == w.level {
		return okAnswer(c)
	}
	w.level = most
	c.out.Params = stringParams("level", levelNames[most])
	return nil
}

// mostVerboseLocked is the most verbose level any caller of w asked for; -1 when none did.
func (w *wrk) mostVerboseLocked() int {
	if len(w.levels) == 0 {
		return -1
	}
	return slices.Min(slices.Collect(maps.Values(w.levels)))
}

// stringParams are params of one string field: logging/setLevel's, resources/subscribe's.
func stringParams(key, value string) json.RawMessage {
	b, _ := json.Marshal(map[string]string{key: value})
	return b
}

// paramString is params.key, read strictly: ok is false when params are not an object with a
// string key, spelled exactly, once (a URI, a progress token, a level).
func paramString(params json.RawMessage, key string) (string, bool) {
	p, err := jsonrpc.ReadObject(params, "params")
	if err != nil || p.Exact(key) != nil {
		return "", false
	}
	s, present, err := p.String(key)
	return s, present && err == nil
}

// The syslog levels of MCP logging, most verbose first.
var levelNames = []string{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}

// LogLevel is the rank of a level's name, spelled exactly (0 is debug, the most verbose); -1
// when name is not one of MCP's eight.
func LogLevel(name string) int { return slices.Index(levelNames, name) }

// LogLevels are MCP's level names, most verbose first, for a refusal's text.
func LogLevels() string { return strings.Join(levelNames, ", ") }

// levelName is params.level, read strictly; "" when it is not one of levelNames.
func levelName(params json.RawMessage) string {
	if name, _ := paramString(params, "level"); slices.Contains(levelNames, name) {
		return name
	}
	return ""
}

// LevelOf is the rank of a log line's params.level; an unknown level counts as the most
// severe, so that no caller misses it.
func LevelOf(params json.RawMessage) int {
	if i := slices.Index(levelNames, levelName(params)); i >= 0 {
		return i
	}
	return len(levelNames) - 1
}
