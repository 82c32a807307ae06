package repository

import "strings"

// ClusterSlots is the number of Redis Cluster hash slots.
const ClusterSlots = 16384

// Slot is the Redis Cluster hash slot of key, as the Redis Cluster
// specification defines it. It is CRC16 (XMODEM) modulo 16384. The CRC
// covers the hash tag, the part between the first "{" and the next "}".
// With no tag, or an empty one, it covers the whole key.
func Slot(key string) uint16 {
	if open := strings.IndexByte(key, '{'); open >= 0 {
		if n := strings.IndexByte(key[open+1:], '}'); n > 0 {
			key = key[open+1 : open+1+n]
		}
	}
	return crc16(key) % ClusterSlots
}

// crc16 is CRC-16/XMODEM (polynomial 0x1021, initial value 0).
func crc16(s string) uint16 {
	var crc uint16
	for i := 0; i < len(s); i++ {
		crc ^= uint16(s[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}
