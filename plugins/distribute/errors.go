package distribute

import (
	"errors"
	"fmt"
)

// Sentinel errors: a push or pull fails with one of them (errors.Is),
// and its text is the refusal's name (Reason).
var (
	// ErrReference: the reference does not parse, or lacks a tag or digest.
	ErrReference = errors.New("reference-invalid")
	// ErrPlainHTTP: plain HTTP was asked for a registry that is not on
	// this machine's loopback.
	ErrPlainHTTP = errors.New("plain-http-refused")
	// ErrUnknownType: the artifact, its config or a layer has a media type
	// that is not a plugin's.
	ErrUnknownType = errors.New("artifact-unknown-type")
	// ErrLayerTooLarge: a descriptor declares more bytes than its bound.
	ErrLayerTooLarge = errors.New("layer-too-large")
	// ErrDigestMismatch: the registry served bytes that are not the ones
	// the descriptor names.
	ErrDigestMismatch = errors.New("digest-mismatch")
	// ErrPluginInvalid: the folder (pushed or pulled) would be refused
	// admission, or the artifact lacks one of its files.
	ErrPluginInvalid = errors.New("plugin-invalid")
	// ErrInstallConflict: the plugin's folder exists and is not a folder
	// (a file or a link), so it is not replaced.
	ErrInstallConflict = errors.New("install-conflict")
	// ErrNotFound: the registry has no such artifact.
	ErrNotFound = errors.New("artifact-not-found")
	// ErrUnauthorized: the registry refused the credentials (or their
	// absence).
	ErrUnauthorized = errors.New("unauthorized")
	// ErrUnreachable: the registry could not be reached in time.
	ErrUnreachable = errors.New("registry-unreachable")
)

// reasons is every sentinel, for Reason.
var reasons = []error{
	ErrReference, ErrPlainHTTP, ErrUnknownType, ErrLayerTooLarge, ErrDigestMismatch,
	ErrPluginInvalid, ErrInstallConflict, ErrNotFound, ErrUnauthorized, ErrUnreachable,
}

// Reason is the name of err's refusal, or "" when it is none of them.
func Reason(err error) string {
	for _, r := range reasons {
		if errors.Is(err, r) {
			return r.Error()
		}
	}
	return ""
}

// refuse is a refusal named by sentinel with what went wrong.
func refuse(sentinel error, format string, a ...any) error {
	return fmt.Errorf("%w: %s", sentinel, fmt.Sprintf(format, a...))
}
