package pairing

import "errors"

// Sentinel errors of the pairings file.
var (
	// ErrNameInvalid refuses a pairing name outside ^[a-z0-9][a-z0-9_-]{0,63}$.
	ErrNameInvalid = errors.New("pairing: a name must match ^[a-z0-9][a-z0-9_-]{0,63}$")
	// ErrExists refuses `pair add` for a name already paired.
	ErrExists = errors.New("pairing: the name is already paired (pair rm it first)")
	// ErrNotFound refuses `pair rm` for a name that is not paired.
	ErrNotFound = errors.New("pairing: no pairing of that name")
	// ErrFileOpen refuses a pairings file that group or others may read.
	ErrFileOpen = errors.New("pairing: the pairings file is readable by group or others; chmod 600 it")
	// ErrFileInvalid refuses a pairings file that is not the documented
	// shape.
	ErrFileInvalid = errors.New("pairing: the pairings file is not valid")
)
