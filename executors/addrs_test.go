package executors

import (
	"net/netip"
	"testing"
)

// specialCases is every entry of the special-purpose table, each with an
// address just outside it and that address's verdict (public only when it
// lands in assigned global unicast space outside every other entry).
var specialCases = []struct {
	prefix      string
	outside     string
	outsideWant bool
}{
	{"0.0.0.0/8", "1.0.0.0", true},
	{"10.0.0.0/8", "11.0.0.0", true},
	{"100.64.0.0/10", "100.63.255.255", true},
	{"127.0.0.0/8", "128.0.0.0", true},
	{"169.254.0.0/16", "169.253.255.255", true},
	{"172.16.0.0/12", "172.32.0.0", true},
	{"192.0.0.0/24", "192.0.1.0", true},
	{"192.0.2.0/24", "192.0.3.0", true},
	{"192.31.196.0/24", "192.31.197.0", true},
	{"192.52.193.0/24", "192.52.194.0", true},
	{"192.88.99.0/24", "192.88.100.0", true},
	{"192.168.0.0/16", "192.169.0.0", true},
	{"192.175.48.0/24", "192.175.49.0", true},
	{"198.18.0.0/15", "198.20.0.0", true},
	{"198.51.100.0/24", "198.51.101.0", true},
	{"203.0.113.0/24", "203.0.114.0", true},
	{"224.0.0.0/4", "223.255.255.255", true},
	{"240.0.0.0/4", "239.255.255.255", false}, // multicast, the entry before
	{"::/96", "::1:0:0", false},               // outside 2000::/3
	{"::ffff:0:0:0/96", "::fffe:ffff:ffff", false},
	{"64:ff9b::/96", "64:ff9b::1:0:0", false},
	{"64:ff9b:1::/48", "64:ff9b:2::", false},
	{"100::/64", "100:0:0:2::", false},
	{"100:0:0:1::/64", "100:0:0:2::", false},
	{"2001::/23", "2001:200::", true},
	{"2001:db8::/32", "2001:db9::", true},
	{"2002::/16", "2003::", true},
	{"2620:4f:8000::/48", "2620:4f:8001::", true},
	{"3fff::/20", "3fff:1000::", true},
	{"5f00::/16", "5f01::", false},
	{"fc00::/7", "fbff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", false},
	{"fe80::/10", "fec0::", false},
	{"fec0::/10", "ff00::", false},
	{"ff00::/8", "feff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", false},
}

// lastAddr is the highest address of p.
func lastAddr(p netip.Prefix) netip.Addr {
	b := p.Masked().Addr().AsSlice()
	for i := p.Bits(); i < len(b)*8; i++ {
		b[i/8] |= 0x80 >> (i % 8)
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}

// TestSpecialPurposeTable: each entry refuses its first and last address
// and not the address just outside it, and the table and the test list
// the same entries.
func TestSpecialPurposeTable(t *testing.T) {
	inTable := map[netip.Prefix]bool{}
	for _, sp := range specialPurpose {
		inTable[sp.prefix] = true
	}
	for _, c := range specialCases {
		p := netip.MustParsePrefix(c.prefix)
		if !inTable[p] {
			t.Errorf("%s is not in the table", p)
		}
		delete(inTable, p)
		for _, a := range []netip.Addr{p.Addr(), lastAddr(p)} {
			if public(a) {
				t.Errorf("%s (in %s) is public", a, p)
			}
		}
		out := netip.MustParseAddr(c.outside)
		if p.Contains(out) {
			t.Fatalf("%s is inside %s", out, p)
		}
		if public(out) != c.outsideWant {
			t.Errorf("%s (outside %s): public %v, want %v", out, p, public(out), c.outsideWant)
		}
	}
	for p := range inTable {
		t.Errorf("%s is in the table but not tested", p)
	}
}

// An IPv6 address that carries an IPv4 one gets that address's verdict.
func TestEmbeddedIPv4(t *testing.T) {
	for in, want := range map[string]bool{
		"64:ff9b::7f00:1":                      false, // NAT64 of 127.0.0.1
		"64:ff9b::a00:1":                       false, // NAT64 of 10.0.0.1
		"64:ff9b::a9fe:a9fe":                   false, // NAT64 of 169.254.169.254
		"64:ff9b::808:808":                     true,  // NAT64 of 8.8.8.8
		"64:ff9b:1::808:808":                   false, // local-use translation: never
		"2002:7f00:1::1":                       false, // 6to4 of 127.0.0.1
		"2002:c0a8:101::1":                     false, // 6to4 of 192.168.1.1
		"2002:808:808::1":                      true,  // 6to4 of 8.8.8.8
		"2001:0:4136:e378:8000:63bf:80ff:fffe": false, // Teredo, client 127.0.0.1
		"2001:0:4136:e378:8000:63bf:f7f7:f7f7": false, // Teredo, client 8.8.8.8: the relay is refused
		"::7f00:1":                             false, // IPv4-compatible 127.0.0.1
		"::808:808":                            false, // IPv4-compatible: deprecated, never
		"::ffff:127.0.0.1":                     false,
		"::ffff:8.8.8.8":                       true,
		"::ffff:0:7f00:1":                      false, // IPv4-translated
		"2606:4700::1111":                      true,
	} {
		if got := public(netip.MustParseAddr(in)); got != want {
			t.Errorf("public(%s) = %v, want %v", in, got, want)
		}
	}
}

func TestPublicInvalid(t *testing.T) {
	if public(netip.Addr{}) {
		t.Error("the zero Addr is public")
	}
}

// FuzzPublic: a zone changes no verdict; an IPv4 address, its
// IPv4-mapped form, its NAT64 form and its 6to4 form (any subnet and
// interface bits) get the same verdict; and any 6to4 address gets its
// embedded IPv4 address's (2002:7f00:1:: reaches 127.0.0.1 through a 6to4
// relay, in principle).
func FuzzPublic(f *testing.F) {
	for _, s := range []string{"127.0.0.1", "8.8.8.8", "10.0.0.1", "::1", "64:ff9b::7f00:1", "2002:808:808::",
		"2002:7f00:1::", "2002:c0a8:101:ffff::1", "2606:4700::1111", "fe80::1%eth0"} {
		f.Add(netip.MustParseAddr(s).AsSlice(), uint64(0x1234_5678_9abc_def0))
	}
	f.Fuzz(func(t *testing.T, b []byte, rest uint64) {
		a, ok := netip.AddrFromSlice(b)
		if !ok {
			return
		}
		if z := a.WithZone("z"); public(z) != public(a) {
			t.Fatalf("%s: public %v, zoned %s %v", a, public(a), z, public(z))
		}
		if a.Is6() && sixToFour.Contains(a) {
			b16 := a.As16()
			v4 := netip.AddrFrom4([4]byte(b16[2:6]))
			if public(a) != public(v4) {
				t.Fatalf("6to4 %s: public %v, its IPv4 %s %v", a, public(a), v4, public(v4))
			}
		}
		if !a.Is4() {
			return
		}
		v4 := public(a)
		four := a.As4()
		mapped := netip.AddrFrom16([16]byte{10: 0xff, 11: 0xff, 12: four[0], 13: four[1], 14: four[2], 15: four[3]})
		nat64 := netip.AddrFrom16([16]byte{0: 0, 1: 0x64, 2: 0xff, 3: 0x9b, 12: four[0], 13: four[1], 14: four[2], 15: four[3]})
		to4 := [16]byte{0: 0x20, 1: 0x02, 2: four[0], 3: four[1], 4: four[2], 5: four[3]}
		for i := range 8 { // the subnet and interface bits are the caller's
			to4[8+i] = byte(rest >> (8 * i))
		}
		to4[6], to4[7] = byte(rest>>3), byte(rest>>11)
		sixTo4 := netip.AddrFrom16(to4)
		if public(mapped) != v4 || public(nat64) != v4 || public(sixTo4) != v4 {
			t.Fatalf("%s: public %v, mapped %v, NAT64 %v, 6to4 %s %v", a, v4, public(mapped), public(nat64), sixTo4, public(sixTo4))
		}
	})
}

// sixToFour is 6to4's prefix (RFC 3056): 2002:V4ADDR::/48.
var sixToFour = netip.MustParsePrefix("2002::/16")
