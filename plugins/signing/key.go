// Package signing signs a plugin and checks its signature, offline:
// a Sigstore bundle (v0.3 JSON, a message signature) over the plugin's
// payload (plugins.Manifest.Payload), made and verified with plain
// public keys through sigstore-go. No certificate authority, transparency
// log or TUF root is consulted; the trust policy (Policy) names the keys.
package signing

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"fmt"

	protocommon "github.com/sigstore/protobuf-specs/gen/pb-go/common/v1"
	"github.com/sigstore/sigstore/pkg/cryptoutils"

	"github.com/airlock/airlock/config/secret"
)

// BundleName is the signature file beside plugin.json.
const BundleName = "plugin.sigstore.json"

// maxKeyBytes bounds a key file; a PEM key is a few hundred bytes.
const maxKeyBytes = 64 << 10

// Fingerprint names a public key as ssh and cosign users know it:
// "SHA256:" and the unpadded base64 of the SHA-256 of its DER
// SubjectPublicKeyInfo.
func Fingerprint(pub crypto.PublicKey) (string, error) {
	sum, err := keyDigest(pub)
	if err != nil {
		return "", err
	}
	return "SHA256:" + base64.RawStdEncoding.EncodeToString(sum), nil
}

// hint is how a Sigstore bundle names its key (cosign's form): the padded
// base64 of the same digest.
func hint(pub crypto.PublicKey) (string, error) {
	sum, err := keyDigest(pub)
	if err != nil {
		return "", err
	}
	return base64.StdEncoding.EncodeToString(sum), nil
}

func keyDigest(pub crypto.PublicKey) ([]byte, error) {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(der)
	return sum[:], nil
}

// hintFingerprint turns a bundle's hint into Fingerprint's form, or ""
// when it is not a SHA-256 digest.
func hintFingerprint(h string) string {
	sum, err := base64.StdEncoding.DecodeString(h)
	if err != nil || len(sum) != sha256.Size {
		return ""
	}
	return "SHA256:" + base64.RawStdEncoding.EncodeToString(sum)
}

// checkKey accepts the key types Airlock signs with and trusts: ECDSA
// P-256 and Ed25519.
func checkKey(pub crypto.PublicKey) (protocommon.PublicKeyDetails, error) {
	switch k := pub.(type) {
	case *ecdsa.PublicKey:
		if k.Curve == elliptic.P256() {
			return protocommon.PublicKeyDetails_PKIX_ECDSA_P256_SHA_256, nil
		}
		return 0, fmt.Errorf("an ECDSA key on %s; only P-256 is accepted", k.Curve.Params().Name)
	case ed25519.PublicKey:
		return protocommon.PublicKeyDetails_PKIX_ED25519, nil
	default:
		return 0, fmt.Errorf("a %T key; only ECDSA P-256 and Ed25519 are accepted", pub)
	}
}

// LoadKey reads a PEM private key: PKCS#8 unencrypted, or a cosign key
// ("ENCRYPTED SIGSTORE PRIVATE KEY", as `cosign generate-key-pair`
// writes) decrypted with password. The file must be the user's own and
// readable by nobody else (mode 0600), like every secret file.
func LoadKey(path string, password func() ([]byte, error)) (crypto.Signer, error) {
	text, err := secret.ReadFile(path, maxKeyBytes)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrKey, err)
	}
	pf := func(bool) ([]byte, error) {
		if password == nil {
			return nil, fmt.Errorf("the key is encrypted; set COSIGN_PASSWORD")
		}
		return password()
	}
	priv, err := cryptoutils.UnmarshalPEMToPrivateKey([]byte(text), pf)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w (want a PEM PKCS#8 ECDSA P-256 or Ed25519 key, e.g. from `openssl genpkey -algorithm ed25519`, or a cosign key)", ErrKey, path, err)
	}
	signer, ok := priv.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("%w: %s: not a signing key", ErrKey, path)
	}
	if _, err := checkKey(signer.Public()); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrKey, path, err)
	}
	return signer, nil
}

// keypair is sigstore-go's sign.Keypair backed by a loaded key.
type keypair struct {
	key     crypto.Signer
	details protocommon.PublicKeyDetails
	hint    string
}

func newKeypair(key crypto.Signer) (*keypair, error) {
	details, err := checkKey(key.Public())
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrKey, err)
	}
	h, err := hint(key.Public())
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrKey, err)
	}
	return &keypair{key: key, details: details, hint: h}, nil
}

func (k *keypair) GetHashAlgorithm() protocommon.HashAlgorithm {
	return protocommon.HashAlgorithm_SHA2_256
}
func (k *keypair) GetSigningAlgorithm() protocommon.PublicKeyDetails { return k.details }
func (k *keypair) GetHint() []byte                                   { return []byte(k.hint) }
func (k *keypair) GetPublicKey() crypto.PublicKey                    { return k.key.Public() }

func (k *keypair) GetKeyAlgorithm() string {
	if k.details == protocommon.PublicKeyDetails_PKIX_ED25519 {
		return "ED25519"
	}
	return "ECDSA"
}

func (k *keypair) GetPublicKeyPem() (string, error) {
	pem, err := cryptoutils.MarshalPublicKeyToPEM(k.key.Public())
	return string(pem), err
}

// SignData signs data and returns the signature and data's SHA-256, the
// bundle's message digest. ECDSA signs the digest; Ed25519 (pure) signs
// data itself, as cosign does.
func (k *keypair) SignData(_ context.Context, data []byte) ([]byte, []byte, error) {
	sum := sha256.Sum256(data)
	if k.details == protocommon.PublicKeyDetails_PKIX_ED25519 {
		sig, err := k.key.Sign(rand.Reader, data, crypto.Hash(0))
		return sig, sum[:], err
	}
	sig, err := k.key.Sign(rand.Reader, sum[:], crypto.SHA256)
	return sig, sum[:], err
}

// NewKeyPair makes a signing key, Ed25519 or (ecdsa set) ECDSA P-256, and
// returns it as PEM: the private key PKCS#8, unencrypted (LoadKey's
// form; keep it 0600), and the public key for a trust policy, with the
// key's fingerprint.
func NewKeyPair(ecdsaKey bool) (privPEM, pubPEM []byte, fingerprint string, err error) {
	var priv crypto.Signer
	if ecdsaKey {
		priv, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	} else {
		_, priv, err = ed25519.GenerateKey(rand.Reader)
	}
	if err != nil {
		return nil, nil, "", err
	}
	if privPEM, err = cryptoutils.MarshalPrivateKeyToPEM(priv); err != nil {
		return nil, nil, "", err
	}
	if pubPEM, err = cryptoutils.MarshalPublicKeyToPEM(priv.Public()); err != nil {
		return nil, nil, "", err
	}
	fingerprint, err = Fingerprint(priv.Public())
	return privPEM, pubPEM, fingerprint, err
}
