package extract

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/md5"
	"crypto/rc4"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// A writer of encrypted PDFs for the tests: the standard security handler
// of ISO 32000, revisions 2 to 6, written from the standard's algorithms
// the other way round from pdfcrypt.go (O and U from the passwords, then
// every string and stream encrypted), so that the tests need no tool.

// cryptSpec says how a test PDF is encrypted.
type cryptSpec struct {
	name            string
	v, r            int
	keyLen          int    // bytes, revisions 2 to 4
	aes             bool   // revision 4: AESV2 rather than RC4
	user, owner     string // passwords
	encryptMetadata bool
	perms           int32
}

var specs = []cryptSpec{
	{name: "RC4 40-bit (R2)", v: 1, r: 2, keyLen: 5},
	{name: "RC4 128-bit (R3)", v: 2, r: 3, keyLen: 16},
	{name: "AES-128 (R4)", v: 4, r: 4, keyLen: 16, aes: true},
	{name: "AES-128 (R4), metadata in clear", v: 4, r: 4, keyLen: 16, aes: true, encryptMetadata: false},
	{name: "RC4 128-bit (R4 crypt filter)", v: 4, r: 4, keyLen: 16},
	{name: "AES-256 (R5)", v: 5, r: 5},
	{name: "AES-256 (R6)", v: 5, r: 6},
}

func init() {
	for i := range specs {
		specs[i].owner = "owner-secret"
		specs[i].perms = -3904 // printing and copying not allowed
		if !strings.Contains(specs[i].name, "in clear") {
			specs[i].encryptMetadata = true
		}
	}
}

// tobj is an object of a test PDF: a dictionary in which «text» stands
// for a string (written encrypted), and an optional stream (its /Length
// added).
type tobj struct {
	dict     string
	stream   []byte
	plain    bool // never encrypted (the metadata stream, when it is in clear)
	indirect bool // the stream's /Length is an object of its own, after the others
}

var stringMark = regexp.MustCompile(`«([^»]*)»`)

// encryptedPDF writes objs (object 1 the catalog, object infoObj the Info
// dictionary) encrypted as spec says.
func encryptedPDF(t testing.TB, objs []tobj, infoObj int, spec cryptSpec) []byte {
	id := []byte("0123456789abcdef")
	var key []byte
	encDict := ""
	p := uint32(spec.perms)
	switch {
	case spec.r <= 4:
		o := ownerValue(spec.owner, spec.user, spec.r, spec.keyLen)
		key = pdfKeyR4([]byte(spec.user), o, p, id, int64(spec.r), spec.keyLen, spec.encryptMetadata)
		u := userValue(key, id, spec.r)
		encDict = fmt.Sprintf("<< /Filter /Standard /V %d /R %d /Length %d /O <%x> /U <%x> /P %d", spec.v, spec.r, spec.keyLen*8, o, u, spec.perms)
		if spec.v == 4 {
			cfm := "/V2"
			if spec.aes {
				cfm = "/AESV2"
			}
			encDict += fmt.Sprintf(" /CF << /StdCF << /CFM %s /AuthEvent /DocOpen /Length 16 >> >> /StmF /StdCF /StrF /StdCF", cfm)
			if !spec.encryptMetadata {
				encDict += " /EncryptMetadata false"
			}
		}
		encDict += " >>"
	default:
		key = bytes.Repeat([]byte{0x5c}, 32)
		hashFn := pdfHash2B
		if spec.r == 5 {
			hashFn = func(pw, salt, udata []byte) []byte {
				h := sha256.Sum256(append(append(append([]byte(nil), pw...), salt...), udata...))
				return h[:]
			}
		}
		uvs, uks, ovs, oks := []byte("uvsaltuv"), []byte("ukeysalt"), []byte("ovsaltov"), []byte("okeysalt")
		u := append(append(hashFn([]byte(spec.user), uvs, nil), uvs...), uks...)
		ue := aesNoIV(hashFn([]byte(spec.user), uks, nil), key)
		o := append(append(hashFn([]byte(spec.owner), ovs, u), ovs...), oks...)
		oe := aesNoIV(hashFn([]byte(spec.owner), oks, u), key)
		perms := make([]byte, 16)
		copy(perms, []byte{byte(p), byte(p >> 8), byte(p >> 16), byte(p >> 24), 0xff, 0xff, 0xff, 0xff, 'T', 'a', 'd', 'b'})
		block, _ := aes.NewCipher(key)
		block.Encrypt(perms, perms)
		encDict = fmt.Sprintf("<< /Filter /Standard /V 5 /R %d /Length 256 /O <%x> /U <%x> /OE <%x> /UE <%x> /Perms <%x> /P %d /CF << /StdCF << /CFM /AESV3 /AuthEvent /DocOpen /Length 32 >> >> /StmF /StdCF /StrF /StdCF >>",
			spec.r, o, u, oe, ue, perms, spec.perms)
	}
	c := cipherRC4
	switch {
	case spec.r >= 5:
		c = cipherAES256
	case spec.aes:
		c = cipherAES128
	}
	sec := &pdfSecurity{key: key}
	var b bytes.Buffer
	b.WriteString("%PDF-1.7\n%\xe2\xe3\xcf\xd3\n")
	offsets := make([]int, len(objs)+1)
	var lengths []int // the indirect lengths, written after the encryption dictionary
	for i, ob := range objs {
		num := i + 1
		k := sec.objectKey(int64(num), 0, c)
		dict := stringMark.ReplaceAllStringFunc(ob.dict, func(m string) string {
			s := stringMark.FindStringSubmatch(m)[1]
			return "<" + hex.EncodeToString(encryptWith(c, k, []byte(s))) + ">"
		})
		offsets[i] = b.Len()
		if ob.stream == nil {
			fmt.Fprintf(&b, "%d 0 obj\n%s\nendobj\n", num, dict)
			continue
		}
		data := ob.stream
		if !ob.plain {
			data = encryptWith(c, k, data)
		}
		length := strconv.Itoa(len(data))
		if ob.indirect {
			lengths = append(lengths, len(data))
			length = fmt.Sprintf("%d 0 R", len(objs)+1+len(lengths))
		}
		fmt.Fprintf(&b, "%d 0 obj\n%s /Length %s >>\nstream\n%s\nendstream\nendobj\n", num, strings.TrimSuffix(strings.TrimSpace(dict), ">>"), length, data)
	}
	encNum := len(objs) + 1
	offsets[len(objs)] = b.Len()
	fmt.Fprintf(&b, "%d 0 obj\n%s\nendobj\n", encNum, encDict)
	for i, n := range lengths {
		offsets = append(offsets, b.Len())
		fmt.Fprintf(&b, "%d 0 obj\n%d\nendobj\n", encNum+1+i, n)
	}
	size := encNum + 1 + len(lengths)
	xref := b.Len()
	fmt.Fprintf(&b, "xref\n0 %d\n0000000000 65535 f \n", size)
	for _, off := range offsets {
		fmt.Fprintf(&b, "%010d 00000 n \n", off)
	}
	fmt.Fprintf(&b, "trailer\n<< /Size %d /Root 1 0 R /Info %d 0 R /Encrypt %d 0 R /ID [<%x> <%x>] >>\nstartxref\n%d\n%%%%EOF\n", size, infoObj, encNum, id, id, xref)
	return b.Bytes()
}

// ownerValue is /O of revisions 2 to 4 (Algorithm 3).
func ownerValue(owner, user string, r, n int) []byte {
	h := md5.Sum(padded([]byte(owner)))
	key := h[:]
	if r >= 3 {
		for i := 0; i < 50; i++ {
			s := md5.Sum(key)
			key = s[:]
		}
	}
	key = key[:n]
	out := padded([]byte(user))
	c, _ := rc4.NewCipher(key)
	c.XORKeyStream(out, out)
	if r >= 3 {
		k := make([]byte, n)
		for i := 1; i <= 19; i++ {
			for j := range key {
				k[j] = key[j] ^ byte(i)
			}
			c, _ := rc4.NewCipher(k)
			c.XORKeyStream(out, out)
		}
	}
	return out
}

// userValue is /U of revisions 2 to 4 (Algorithms 4 and 5).
func userValue(key, id []byte, r int) []byte {
	if r == 2 {
		out := make([]byte, 32)
		c, _ := rc4.NewCipher(key)
		c.XORKeyStream(out, passwordPad)
		return out
	}
	h := md5.New()
	h.Write(passwordPad)
	h.Write(id)
	x := h.Sum(nil)
	k := make([]byte, len(key))
	for i := 0; i < 20; i++ {
		for j := range key {
			k[j] = key[j] ^ byte(i)
		}
		c, _ := rc4.NewCipher(k)
		c.XORKeyStream(x, x)
	}
	return append(x, bytes.Repeat([]byte{0xab}, 16)...)
}

func aesNoIV(key, data []byte) []byte {
	block, _ := aes.NewCipher(key)
	out := make([]byte, len(data))
	cipher.NewCBCEncrypter(block, make([]byte, 16)).CryptBlocks(out, data)
	return out
}

// testIV is the AES initialisation vector of the test files.
var testIV = []byte("iv-of-the-tests!")

func encryptWith(c pdfCipher, key, data []byte) []byte {
	if c == cipherRC4 {
		out := make([]byte, len(data))
		rc, _ := rc4.NewCipher(key)
		rc.XORKeyStream(out, data)
		return out
	}
	pad := 16 - len(data)%16
	in := append(bytes.Clone(data), bytes.Repeat([]byte{byte(pad)}, pad)...)
	iv := testIV
	block, _ := aes.NewCipher(key)
	out := make([]byte, len(in))
	cipher.NewCBCEncrypter(block, iv).CryptBlocks(out, in)
	return append(iv, out...)
}

// secretDocument is a two-page document with an outline, a title and a
// metadata stream: strings and streams of every kind the reader uses.
func secretDocument() ([]tobj, int) {
	page := func(text string) []byte {
		return []byte("BT /F1 12 Tf 72 720 Td (" + text + ") Tj ET")
	}
	return []tobj{
		{dict: "<< /Type /Catalog /Pages 2 0 R /Outlines 7 0 R /Metadata 10 0 R >>"},
		{dict: "<< /Type /Pages /Kids [3 0 R 4 0 R] /Count 2 >>"},
		{dict: "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 5 0 R /Resources << /Font << /F1 9 0 R >> >> >>"},
		{dict: "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 6 0 R /Resources << /Font << /F1 9 0 R >> >> >>"},
		{dict: "<< >>", stream: page("Herons wait in (shallow) water for fish.")},
		{dict: "<< >>", stream: page("Storks nest on church towers.")},
		{dict: "<< /Type /Outlines /First 8 0 R /Last 11 0 R /Count 2 >>"},
		{dict: "<< /Title «Wading birds» /Parent 7 0 R /Next 11 0 R /Dest [3 0 R /Fit] >>"},
		{dict: "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"},
		{dict: "<< /Type /Metadata /Subtype /XML >>", stream: []byte("<x:xmpmeta xmlns:x='adobe:ns:meta/'/>")},
		{dict: "<< /Title «Nesting \\ (and) towers» /Parent 7 0 R /Prev 8 0 R /Dest [4 0 R /Fit] >>"},
		{dict: "<< /Title «Birds of the Marsh» /Producer «ragmem tests» >>"},
	}, 12
}

// TestOwnerPasswordPDFs: a PDF with only an owner password (printing and
// copying restricted) is read like the same PDF unencrypted, in every
// revision of the standard security handler; one that needs a password to
// open is refused, saying so.
func TestOwnerPasswordPDFs(t *testing.T) {
	objs, info := secretDocument()
	for _, spec := range specs {
		o := objs
		if !spec.encryptMetadata {
			o = append([]tobj(nil), objs...)
			o[9].plain = true
		}
		data := encryptedPDF(t, o, info, spec)
		if bytes.Contains(data, []byte("Herons")) {
			t.Fatalf("%s: the test file is not encrypted", spec.name)
		}
		p, err := PDF(data, nil)
		if err != nil {
			t.Errorf("%s: %v", spec.name, err)
			continue
		}
		if p.Title != "Birds of the Marsh" {
			t.Errorf("%s: title %q", spec.name, p.Title)
		}
		for _, want := range []string{"<h1>Wading birds</h1>", "Herons wait in (shallow) water for fish.", `<h1>Nesting \ (and) towers</h1>`, "Storks nest on church towers."} {
			if !strings.Contains(p.HTML, want) {
				t.Errorf("%s: no %q in %q", spec.name, want, p.HTML)
			}
		}

		spec.user = "open-sesame"
		_, err = PDF(encryptedPDF(t, o, info, spec), nil)
		if !errors.Is(err, ErrEncrypted) || !strings.Contains(err.Error(), "it needs a password to open") {
			t.Errorf("%s with a user password: %v", spec.name, err)
		}
	}
	// A security handler other than the standard one.
	data := encryptedPDF(t, objs, info, specs[0])
	data = bytes.Replace(data, []byte("/Filter /Standard"), []byte("/Filter /PubSec  "), 1)
	if _, err := PDF(data, nil); !errors.Is(err, ErrEncrypted) || !strings.Contains(err.Error(), "(/PubSec)") {
		t.Errorf("public-key security handler: %v", err)
	}
}

// TestPutString: decrypted strings are written back in the space the
// encrypted ones took, as literal or hex strings the lexer reads back.
func TestPutString(t *testing.T) {
	for _, c := range []struct {
		room  int
		plain string
	}{
		{40, "plain title"},
		{40, `back\slash (parens) and )unbalanced(`},
		{12, "0123456789abcdef"}, // does not fit: cut
		{2, "x"},
	} {
		out := bytes.Repeat([]byte{'#'}, c.room)
		putString(out, pdfToken{kind: tokString, start: 0, end: c.room}, []byte(c.plain))
		l := pdfLexer{b: out}
		tok := l.next()
		got := string(decodeString(out, tok))
		if !strings.HasPrefix(c.plain, got) || c.room >= 2*len(c.plain)+2 && got != c.plain {
			t.Errorf("room %d: %q read back as %q (%q)", c.room, c.plain, got, out)
		}
		if rest := strings.TrimSpace(string(out[tok.end:])); rest != "" {
			t.Errorf("room %d: %q left after the string", c.room, rest)
		}
	}
}

// TestDecryptWith: what the ciphers encrypt decrypts to the same bytes,
// AES padding removed, at every length around the block size.
func TestDecryptWith(t *testing.T) {
	for _, c := range []struct {
		c   pdfCipher
		key []byte
	}{{cipherRC4, []byte("0123456789")}, {cipherAES128, bytes.Repeat([]byte{7}, 16)}, {cipherAES256, bytes.Repeat([]byte{9}, 32)}} {
		for n := 0; n <= 40; n++ {
			plain := bytes.Repeat([]byte{'p'}, n)
			if got := decryptWith(c.c, c.key, encryptWith(c.c, c.key, plain)); !bytes.Equal(got, plain) {
				t.Errorf("cipher %d, %d bytes: decrypted to %q", c.c, n, got)
			}
		}
	}
}

// FuzzPDFScan: the scan, the structure checks and the decryption never
// panic (they run before the library, outside its recover) and never let
// the decrypted copy differ in length from the file: offsets must hold.
func FuzzPDFScan(f *testing.F) {
	for _, name := range []string{"guide.pdf", "encrypted.pdf", "owner-aes256.pdf", "owner-rc4-40.pdf", "owner-aes128.pdf"} {
		f.Add(readFixture(&testing.T{}, name))
	}
	objs, info := secretDocument()
	for _, spec := range specs {
		f.Add(encryptedPDF(f, objs, info, spec))
	}
	f.Add(rawPDF("<< /Type /Catalog /Pages 2 0 R >>", "<< /Type /Pages /Kids [3 0 R] /Count 1 >>", "<< /Type /ObjStm /N 5 /Extends 3 0 R >>"))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := scanPDF(data)
		if err != nil {
			return
		}
		_ = checkStructure(data, s)
		sec, err := pdfEncryption(s)
		if err != nil || sec == nil {
			return
		}
		if out := pdfDecrypt(data, s, sec); len(out) != len(data) {
			t.Fatalf("decrypted copy of %d bytes from %d", len(out), len(data))
		}
	})
}

// TestIndirectLengthEOL: a stream whose /Length is an object of its own is
// read up to "endstream", without the end of line before it; when its
// encrypted data itself ends in a carriage return (so that "\r\n" stands
// before endstream), the AES block size tells that the "\r" is data.
func TestIndirectLengthEOL(t *testing.T) {
	objs, info := secretDocument()
	objs = append([]tobj(nil), objs...)
	objs[4].indirect, objs[5].indirect = true, true
	spec := specs[len(specs)-1] // AES-256: one key for every object
	defer func(iv []byte) { testIV = iv }(testIV)
	found := false
	for i := 0; i < 4096 && !found; i++ {
		testIV = []byte(fmt.Sprintf("iv-of-the-te%04d", i))
		enc := encryptWith(cipherAES256, bytes.Repeat([]byte{0x5c}, 32), objs[4].stream)
		found = enc[len(enc)-1] == '\r' // then "\r\n" before endstream
	}
	if !found {
		t.Fatal("no initialisation vector makes the data end in a carriage return")
	}
	p, err := PDF(encryptedPDF(t, objs, info, spec), nil)
	if err != nil || !strings.Contains(p.Text, "Herons wait in (shallow) water for fish.") || !strings.Contains(p.Text, "Storks nest") {
		t.Fatalf("%v: %q", err, p.Text)
	}
}
