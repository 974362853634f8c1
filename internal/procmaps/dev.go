package procmaps

// Mkdev encodes a device number from its major and minor parts the way the
// kernel reports it to user space in stat(2)'s st_dev, so that a Library's
// Dev can be compared with os.Stat results.
//
// /proc/<pid>/maps prints major and minor separately. The kernel's user-space
// encoding (new_encode_dev) keeps the low 8 bits of the minor in bits 0-7,
// the 12-bit major in bits 8-19 and the rest of the 20-bit minor in bits
// 20-31. This is glibc's gnu_dev_makedev (and golang.org/x/sys/unix.Mkdev),
// which gives the same value for every device number the kernel can have
// and extends it to 32-bit majors by putting their high bits at 44-63.
func Mkdev(major, minor uint32) uint64 {
	maj, mnr := uint64(major), uint64(minor)
	return (maj&0x00000fff)<<8 |
		(maj&0xfffff000)<<32 |
		(mnr & 0x000000ff) |
		(mnr&0xffffff00)<<12
}
