package bmcemu

// BootSector returns a 512-byte boot record whose real-mode code writes msg
// to the first serial port (COM1, I/O port 0x3F8) and halts. It calls no
// BIOS service, so it runs wherever a BIOS loads it at 0000:7C00: from a
// disk's first sector, or as an El Torito no-emulation CD boot image. A VM
// booting it shows on its serial console which device it booted.
func BootSector(msg string) []byte {
	code := []byte{
		0xFA,       // cli
		0xFC,       // cld
		0x31, 0xC0, // xor ax, ax
		0x8E, 0xD8, // mov ds, ax          ; offsets are linear addresses
		0xBE, 0, 0, // mov si, msg         ; patched below
		0xBA, 0xF8, 0x03, // mov dx, 0x3F8 ; COM1 data register
		0xAC,       // next: lodsb
		0x84, 0xC0, // test al, al
		0x74, 0x03, // jz done             ; NUL ends the message
		0xEE,       // out dx, al
		0xEB, 0xF8, // jmp next
		0xF4,       // done: hlt
		0xEB, 0xFD, // jmp done
	}
	at := 0x7C00 + len(code) // the message follows the code
	code[7], code[8] = byte(at), byte(at>>8)
	b := make([]byte, 512)
	n := copy(b, code)
	copy(b[n:min(n+len(msg), 506)], msg)
	copy(b[min(n+len(msg), 506):508], "\r\n\x00")
	b[510], b[511] = 0x55, 0xAA
	return b
}
