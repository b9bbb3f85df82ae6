package wire

// PluginStatus is one plugin folder as a catalog last saw it, admitted or
// refused: an entry of GET /v1/plugins (PROTOCOL section 7), which the
// broker serves from its catalog and `airlock tools --broker` reads. It
// is here, beside Descriptor, so that a client of /v1 reads it without
// linking the catalog and the runtime behind it.
type PluginStatus struct {
	ID       string  `json:"id"`
	Origin   string  `json:"origin"` // plugins.OriginBuiltin or plugins.OriginPlugins
	Version  string  `json:"version,omitempty"`
	Admitted bool    `json:"admitted"`
	Reason   string  `json:"reason,omitempty"` // a plugins.Reasons entry when refused
	Detail   string  `json:"detail,omitempty"` // for the operator
	Signer   *Signer `json:"signer,omitempty"` // an admitted plugin's, when it is signed
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

// Signer is who signed a plugin (PROTOCOL section 8.5): its key's
// fingerprint ("SHA256:" and the unpadded base64 of the SHA-256 of the
// key's DER SubjectPublicKeyInfo) and whether the operator's trust policy
// verified the signature. Unverified, it is only the key the signature
// names: without a trust policy there is no key to check it with.
type Signer struct {
	Key      string `json:"key"`
	Verified bool   `json:"verified"`
}

// String is the source in one line, "" for none: ref@digest.
func (s *PluginSource) String() string {
	if s == nil {
		return ""
	}
	return s.Ref + "@" + s.Digest
}

// String is the signer as the log and `airlock tools` show it: the key's
// fingerprint, marked "(unverified)" when no trust policy verified it;
// "" for none.
func (s *Signer) String() string {
	switch {
	case s == nil:
		return ""
	case s.Verified:
		return s.Key
	default:
		return s.Key + " (unverified)"
	}
}
