package extract

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/md5"
	"crypto/rc4"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"fmt"
	"hash"
	"strconv"
)

// Encrypted PDFs. A PDF encrypted with the standard security handler and an
// empty user password (only an owner password, which restricts printing or
// copying) opens in any viewer without a password; ragmem reads it. The
// PDF library decrypts RC4 and AES-128 but not AES-256 (revisions 5 and 6,
// what qpdf and Acrobat write today), keeps AES padding in what it
// decrypts and ignores /EncryptMetadata false; so pdfDecrypt decrypts the
// file itself, every revision from 2 to 6, and hands the library a copy
// with each string and stream decrypted in place (offsets kept, so the
// cross-reference table still holds) and the trailer's /Encrypt renamed.
// A file that needs a password to open fails with ErrEncrypted.

// pdfCipher is how strings or streams are encrypted.
type pdfCipher byte

const (
	cipherNone pdfCipher = iota // not encrypted (Identity)
	cipherRC4
	cipherAES128
	cipherAES256
)

// pdfSecurity is what decryption needs: the file key and the ciphers.
type pdfSecurity struct {
	key              []byte
	strings, streams pdfCipher
	encryptMetadata  bool
	encryptObj       int64 // the encryption dictionary's object number (0: direct)
}

var passwordPad = []byte{
	0x28, 0xBF, 0x4E, 0x5E, 0x4E, 0x75, 0x8A, 0x41, 0x64, 0x00, 0x4E, 0x56, 0xFF, 0xFA, 0x01, 0x08,
	0x2E, 0x2E, 0x00, 0xB6, 0xD0, 0x68, 0x3E, 0x80, 0x2F, 0x0C, 0xA9, 0xFE, 0x64, 0x53, 0x69, 0x7A,
}

// errNeedsPassword is the reason for a PDF that does not open with the
// empty password.
var errNeedsPassword = fmt.Errorf("%w: it needs a password to open; decrypt it first", ErrEncrypted)

// pdfEncryption returns the security settings of an encrypted file, or nil
// for one that is not encrypted. It fails with ErrEncrypted when the file
// needs a password or uses a security handler ragmem cannot read.
func pdfEncryption(s *pdfScan) (*pdfSecurity, error) {
	var trailer *pdfObj
	for _, t := range s.trailers {
		if t.key("Encrypt") != nil {
			trailer = t
		}
	}
	if trailer == nil {
		return nil, nil
	}
	sec := &pdfSecurity{encryptMetadata: true}
	enc := trailer.key("Encrypt")
	if enc.kind == pdfRef {
		sec.encryptObj = enc.i
		def := s.objByNum[enc.i]
		if def == nil || def.val == nil {
			return nil, fmt.Errorf("%w: its encryption dictionary is missing", ErrDamaged)
		}
		enc = def.val
	}
	if enc.kind != pdfDict {
		return nil, fmt.Errorf("%w: its encryption dictionary is missing", ErrDamaged)
	}
	if f := enc.key("Filter"); !f.isName("Standard") {
		name := "?"
		if f != nil {
			name = f.s
		}
		return nil, fmt.Errorf("%w: it is encrypted for a security handler ragmem cannot read (/%s); decrypt it first", ErrEncrypted, name)
	}
	if em := enc.key("EncryptMetadata"); em != nil && em.kind == pdfBool && em.s == "false" {
		sec.encryptMetadata = false
	}
	keyLen, err := sec.ciphers(s, enc)
	if err != nil {
		return nil, err
	}
	switch r, _ := enc.key("R").intValue(s.ints); {
	case r >= 2 && r <= 4:
		sec.key, err = pdfFileKeyR4(s, trailer, enc, r, keyLen, sec.encryptMetadata)
	case r == 5 || r == 6:
		sec.key, err = pdfFileKeyR6(enc, r)
	default:
		err = fmt.Errorf("%w: it is encrypted with a method ragmem cannot read (R %d); decrypt it first", ErrEncrypted, r)
	}
	if err != nil {
		return nil, err
	}
	return sec, nil
}

// pdfDictString returns the string value of key k of dictionary d, nil when
// it has none.
func pdfDictString(d *pdfObj, k string) []byte {
	if o := d.key(k); o != nil && o.kind == pdfString {
		return []byte(o.s)
	}
	return nil
}

// ciphers sets the ciphers of the strings and the streams from the
// encryption dictionary enc (its /V and, from V 4, its crypt filters) and
// returns the length of the file key in bytes.
func (sec *pdfSecurity) ciphers(s *pdfScan, enc *pdfObj) (int64, error) {
	v, _ := enc.key("V").intValue(s.ints)
	keyLen := int64(5)
	if l, ok := enc.key("Length").intValue(s.ints); ok && v >= 2 {
		keyLen = l / 8
	}
	switch v {
	case 1:
		sec.strings, sec.streams, keyLen = cipherRC4, cipherRC4, 5
	case 2:
		sec.strings, sec.streams = cipherRC4, cipherRC4
	case 4, 5:
		var n1, n2 int64
		var err error
		if sec.strings, n1, err = pdfCryptFilter(s, enc, "StrF"); err != nil {
			return 0, err
		}
		if sec.streams, n2, err = pdfCryptFilter(s, enc, "StmF"); err != nil {
			return 0, err
		}
		if n := max(n1, n2); n > 0 {
			keyLen = n
		} else if _, ok := enc.key("Length").intValue(s.ints); !ok {
			keyLen = 16
		}
	default:
		return 0, fmt.Errorf("%w: it is encrypted with a method ragmem cannot read (V %d); decrypt it first", ErrEncrypted, v)
	}
	return keyLen, nil
}

// pdfCryptFilter returns the cipher, and the key length in bytes it names
// (0: none), of the crypt filter that entry k (StrF or StmF) of the
// encryption dictionary enc selects from its /CF.
func pdfCryptFilter(s *pdfScan, enc *pdfObj, k string) (pdfCipher, int64, error) {
	name := "Identity"
	if f := enc.key(k); f != nil && f.kind == pdfNameKind {
		name = f.s
	}
	if name == "Identity" {
		return cipherNone, 0, nil
	}
	cf := enc.key("CF").key(name)
	if cf == nil {
		return 0, 0, fmt.Errorf("%w: its crypt filter /%s is missing", ErrDamaged, name)
	}
	var n int64
	if l, ok := cf.key("Length").intValue(s.ints); ok {
		if n = l; l > 32 {
			n = l / 8 // in bits, as the standard says; most writers give bytes
		}
	}
	switch m := cf.key("CFM"); {
	case m == nil || m.isName("None"):
		return cipherNone, 0, nil
	case m.isName("V2"):
		return cipherRC4, n, nil
	case m.isName("AESV2"):
		return cipherAES128, 16, nil
	case m.isName("AESV3"):
		return cipherAES256, 32, nil
	default:
		return 0, 0, fmt.Errorf("%w: it is encrypted with a method ragmem cannot read (/%s); decrypt it first", ErrEncrypted, m.s)
	}
}

// pdfFileKeyR4 computes the file key of revisions 2 to 4 for the empty
// user password, failing with errNeedsPassword when /U does not confirm it.
func pdfFileKeyR4(s *pdfScan, trailer, enc *pdfObj, r, keyLen int64, encryptMetadata bool) ([]byte, error) {
	if keyLen < 5 || keyLen > 16 {
		return nil, fmt.Errorf("%w: a key of %d bits", ErrDamaged, keyLen*8)
	}
	var id []byte
	if ids := trailer.key("ID"); ids != nil && ids.kind == pdfArray && len(ids.arr) > 0 && ids.arr[0].kind == pdfString {
		id = []byte(ids.arr[0].s)
	}
	o, u := pdfDictString(enc, "O"), pdfDictString(enc, "U")
	if len(o) < 32 || len(u) < 32 {
		return nil, fmt.Errorf("%w: its encryption dictionary lacks /O or /U", ErrDamaged)
	}
	p, _ := enc.key("P").intValue(s.ints)
	key := pdfKeyR4(nil, o[:32], uint32(p), id, r, int(keyLen), encryptMetadata)
	if !pdfUserOK(key, u, id, r) {
		return nil, errNeedsPassword
	}
	return key, nil
}

// pdfFileKeyR6 computes the file key of revisions 5 and 6 for the empty
// user password: checked against /U, then decrypted from /UE.
func pdfFileKeyR6(enc *pdfObj, r int64) ([]byte, error) {
	u, ue := pdfDictString(enc, "U"), pdfDictString(enc, "UE")
	if len(u) < 48 || len(ue) < 32 {
		return nil, fmt.Errorf("%w: its encryption dictionary lacks /U or /UE", ErrDamaged)
	}
	hashFn := pdfHash2B
	if r == 5 {
		hashFn = func(pw, salt, udata []byte) []byte {
			h := sha256.Sum256(append(append(append([]byte(nil), pw...), salt...), udata...))
			return h[:]
		}
	}
	if !bytes.Equal(hashFn(nil, u[32:40], nil), u[:32]) {
		return nil, errNeedsPassword
	}
	block, err := aes.NewCipher(hashFn(nil, u[40:48], nil))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrDamaged, err)
	}
	key := make([]byte, 32)
	cipher.NewCBCDecrypter(block, make([]byte, 16)).CryptBlocks(key, ue[:32])
	return key, nil
}

// pdfKeyR4 computes the file key of revisions 2 to 4 from a user password
// (Algorithm 2 of ISO 32000-1, 7.6.3.3).
func pdfKeyR4(pw, o []byte, p uint32, id []byte, r int64, n int, encryptMetadata bool) []byte {
	h := md5.New()
	h.Write(padded(pw))
	h.Write(o)
	h.Write([]byte{byte(p), byte(p >> 8), byte(p >> 16), byte(p >> 24)})
	h.Write(id)
	if r >= 4 && !encryptMetadata {
		h.Write([]byte{0xff, 0xff, 0xff, 0xff})
	}
	key := h.Sum(nil)
	if r >= 3 {
		for i := 0; i < 50; i++ {
			s := md5.Sum(key[:n])
			key = s[:]
		}
	}
	if r == 2 {
		n = 5
	}
	return key[:n]
}

func padded(pw []byte) []byte {
	out := make([]byte, 0, 32)
	out = append(out, pw[:min(len(pw), 32)]...)
	return append(out, passwordPad[:32-len(out)]...)
}

// pdfUserOK checks a file key against /U (Algorithms 4 and 5).
func pdfUserOK(key, u, id []byte, r int64) bool {
	if r == 2 {
		c, err := rc4.NewCipher(key)
		if err != nil {
			return false
		}
		x := make([]byte, 32)
		c.XORKeyStream(x, passwordPad)
		return bytes.Equal(x, u[:32])
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
		c, err := rc4.NewCipher(k)
		if err != nil {
			return false
		}
		c.XORKeyStream(x, x)
	}
	return bytes.Equal(x, u[:16])
}

// pdfHash2B is the hash of revision 6 (Algorithm 2.B of ISO 32000-2).
func pdfHash2B(pw, salt, udata []byte) []byte {
	h := sha256.New()
	h.Write(pw)
	h.Write(salt)
	h.Write(udata)
	k := h.Sum(nil)
	var e []byte
	for round := 0; ; round++ {
		unit := make([]byte, 0, len(pw)+len(k)+len(udata))
		unit = append(append(append(unit, pw...), k...), udata...)
		k1 := bytes.Repeat(unit, 64)
		block, _ := aes.NewCipher(k[:16])
		e = make([]byte, len(k1))
		cipher.NewCBCEncrypter(block, k[16:32]).CryptBlocks(e, k1)
		sum := 0
		for _, c := range e[:16] {
			sum += int(c)
		}
		var next hash.Hash
		switch sum % 3 {
		case 0:
			next = sha256.New()
		case 1:
			next = sha512.New384()
		default:
			next = sha512.New()
		}
		next.Write(e)
		k = next.Sum(nil)
		if round >= 63 && int(e[len(e)-1]) <= round+1-32 {
			break
		}
	}
	return k[:32]
}

// objectKey is the key of one object's strings and streams (Algorithm 1):
// the file key itself for AES-256.
func (sec *pdfSecurity) objectKey(num, gen int64, c pdfCipher) []byte {
	if c == cipherAES256 {
		return sec.key
	}
	h := md5.New()
	h.Write(sec.key)
	h.Write([]byte{byte(num), byte(num >> 8), byte(num >> 16), byte(gen), byte(gen >> 8)})
	if c == cipherAES128 {
		h.Write([]byte("sAlT"))
	}
	return h.Sum(nil)[:min(len(sec.key)+5, 16)]
}

// decrypt decrypts data with cipher c and key.
func decryptWith(c pdfCipher, key, data []byte) []byte {
	switch c {
	case cipherRC4:
		rc, err := rc4.NewCipher(key)
		if err != nil {
			return nil
		}
		out := make([]byte, len(data))
		rc.XORKeyStream(out, data)
		return out
	case cipherAES128, cipherAES256:
		if len(data) < 32 {
			return nil
		}
		block, err := aes.NewCipher(key)
		if err != nil {
			return nil
		}
		body := data[16:]
		body = body[:len(body)/16*16]
		out := make([]byte, len(body))
		cipher.NewCBCDecrypter(block, data[:16]).CryptBlocks(out, body)
		if n := len(out); n > 0 {
			if p := int(out[n-1]); p >= 1 && p <= 16 && p <= n && bytes.Count(out[n-p:], out[n-1:]) == p {
				out = out[:n-p]
			}
		}
		return out
	}
	return data
}

// pdfDecrypt returns a copy of b with every encrypted string and stream
// decrypted in place and the trailers' /Encrypt renamed /NoCrypt, so that
// the library reads it as a file that is not encrypted.
func pdfDecrypt(b []byte, s *pdfScan, sec *pdfSecurity) []byte {
	out := bytes.Clone(b)
	for _, d := range s.defs {
		if d.typ == "XRef" || sec.encryptObj != 0 && d.num == sec.encryptObj {
			continue
		}
		if sec.strings != cipherNone {
			key := sec.objectKey(d.num, d.gen, sec.strings)
			for _, sp := range d.strings {
				if sp.keep {
					continue
				}
				enc := decodeString(b, sp.tok)
				if len(enc) == 0 {
					continue
				}
				putString(out, sp.tok, decryptWith(sec.strings, key, enc))
			}
		}
		if !d.stream || d.crypt || sec.streams == cipherNone || d.typ == "Metadata" && !sec.encryptMetadata {
			continue
		}
		data := b[d.data[0]:d.data[1]]
		if sec.streams != cipherRC4 {
			// AES data is whole blocks: bytes taken for an end of line
			// may be the data's own.
			for k := 1; k <= d.eol && len(data)%16 != 0; k++ {
				if (len(data)+k)%16 == 0 {
					data = b[d.data[0] : d.data[1]+k]
				}
			}
		}
		plain := decryptWith(sec.streams, sec.objectKey(d.num, d.gen, sec.streams), data)
		end := d.data[0] + len(data)
		n := copy(out[d.data[0]:end], plain)
		for i := d.data[0] + n; i < end; i++ {
			out[i] = ' '
		}
		if n == len(data) {
			continue
		}
		// The data shrank: its /Length says so, where it can be rewritten
		// in place (the bytes left are spaces either way, after the data).
		switch {
		case d.lengthSpan != [2]int{}:
			putInt(out, d.lengthSpan, n)
		case d.lengthRef != 0:
			if def := s.intDefs[d.lengthRef]; def != nil && s.ints[d.lengthRef] == int64(len(data)) {
				putInt(out, def.intSpan, n)
			}
		}
	}
	for _, t := range s.trailers {
		if e := t.key("Encrypt"); e != nil {
			i := e.start
			for i > 0 && isPDFSpace(out[i-1]) {
				i--
			}
			if bytes.HasSuffix(out[:i], []byte("/Encrypt")) {
				copy(out[i-len("/Encrypt"):], "/NoCrypt")
			}
		}
	}
	return out
}

// putInt writes n over an integer token, padded with spaces.
func putInt(out []byte, span [2]int, n int) {
	s := strconv.Itoa(n)
	if len(s) > span[1]-span[0] {
		return
	}
	copy(out[span[0]:], s)
	for i := span[0] + len(s); i < span[1]; i++ {
		out[i] = ' '
	}
}

// putString writes plain over a string token: as a literal string, else
// as a hex string, padded with spaces; in the rare case that neither fits
// (an RC4 string written with few escapes whose plain text needs many),
// as much of it as fits.
func putString(out []byte, t pdfToken, plain []byte) {
	room := t.end - t.start
	lit := literal(plain)
	if len(lit) > room && 2*len(plain)+2 <= room {
		lit = []byte("<" + hex.EncodeToString(plain) + ">")
	}
	for len(lit) > room && len(plain) > 0 {
		plain = plain[:len(plain)-1-(len(lit)-room)/2]
		lit = literal(plain)
	}
	if len(lit) > room {
		lit = []byte("()")
	}
	copy(out[t.start:], lit)
	for i := t.start + len(lit); i < t.end; i++ {
		out[i] = ' '
	}
}

// literal writes s as a PDF literal string.
func literal(s []byte) []byte {
	out := make([]byte, 0, len(s)+2)
	out = append(out, '(')
	for _, c := range s {
		switch c {
		case '(', ')', '\\':
			out = append(out, '\\', c)
		case '\r':
			out = append(out, '\\', 'r')
		default:
			out = append(out, c)
		}
	}
	return append(out, ')')
}
