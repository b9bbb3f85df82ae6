// Package pluginid is the rule for a plugin's id, the one name a plugin
// has: its folder's name, its descriptor's descriptorId and its section's
// key in plugin_config. It sits in config, the lowest floor that names
// plugins, so that config checks plugin_config and executors/wire checks
// descriptors by one rule without config importing the executors
// (RATIONALE.md, "Why is the plugin id rule a package of its own, in
// config?").
package pluginid

import "regexp"

// Pattern is the rule as a regular expression.
const Pattern = `^[a-z0-9][a-z0-9_-]{0,63}$`

// Rule says in words what Pattern accepts, for messages.
const Rule = "1 to 64 lower-case letters, digits, - and _, starting with a letter or digit"

var pattern = regexp.MustCompile(Pattern)

// Valid reports whether id may name a plugin (and so its descriptor).
func Valid(id string) bool { return pattern.MatchString(id) }
