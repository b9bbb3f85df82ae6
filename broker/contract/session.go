package contract

// Capabilities are a session's declared browser capabilities, as mint and
// bootstrap return them (PROTOCOL section 2). The broker and its Go client
// share this one declaration, so a field cannot exist on one side only.
type Capabilities struct {
	ReadOnly              bool `json:"readOnly"`
	CanNavigateSource     bool `json:"canNavigateSource"`
	CanWriteSource        bool `json:"canWriteSource"`
	CanRunAgent           bool `json:"canRunAgent"`
	CanEditGraph          bool `json:"canEditGraph"`
	CanProposeSourceEdits bool `json:"canProposeSourceEdits"`
}
