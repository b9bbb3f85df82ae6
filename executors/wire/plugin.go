package wire

// PluginStatus is one plugin folder as a catalog last saw it, admitted or
// refused: an entry of GET /v1/plugins (PROTOCOL section 7), which the
// broker serves from its catalog and `airlock tools --broker` reads. It
// is here, beside Descriptor, so that a client of /v1 reads it without
// linking the catalog and the runtime behind it.
type PluginStatus struct {
	ID       string `json:"id"`
	Origin   string `json:"origin"` // plugins.OriginBuiltin or plugins.OriginPlugins
	Version  string `json:"version,omitempty"`
	Admitted bool   `json:"admitted"`
	Reason   string `json:"reason,omitempty"` // a plugins.Reasons entry when refused
	Detail   string `json:"detail,omitempty"` // for the operator
	// Source is where the folder was pulled from; absent for a folder
	// dropped in by hand.
	Source *PluginSource `json:"source,omitempty"`
}

// PluginSource is where `airlock plugin pull` installed a plugin folder
// from, as it recorded it beside plugin.json (plugins.SourceName). It is
// the operator's record, never a check: admission and the module's hash
// do not read it.
type PluginSource struct {
	Ref      string `json:"ref"`                // registry/repository:tag (or @digest) as pulled
	Digest   string `json:"digest"`             // the artifact manifest's digest
	PulledAt string `json:"pulledAt,omitempty"` // RFC 3339, UTC
}
