package faults

import (
	"fmt"
)

// sharedPorts are the ports of .ci/services.sh: the suite refuses to use
// any of them.
var sharedPorts = map[int]bool{3306: true, 6379: true, 6380: true, 6381: true, 6382: true,
	6390: true, 6391: true, 26390: true, 26391: true, 26392: true, 2181: true}

// faultPorts are the suite's fixed ports, derived from one base (the
// Redis servers and Sentinels take free ports).
type faultPorts struct {
	App     [2]int // the two seckill instances
	MariaDB int
}

// portsFrom lays the ports out from base: app base+1, +2. MariaDB +6.
func portsFrom(base int) faultPorts {
	return faultPorts{App: [2]int{base + 1, base + 2}, MariaDB: base + 6}
}

// all lists every port.
func (p faultPorts) all() []int { return []int{p.App[0], p.App[1], p.MariaDB} }

// check refuses a layout that touches a shared service's port or leaves
// the unprivileged range.
func (p faultPorts) check() error {
	for _, port := range p.all() {
		if sharedPorts[port] {
			return fmt.Errorf("port %d belongs to the shared services of .ci/services.sh: choose another FAULTS_BASE_PORT", port)
		}
		if port < 1024 || port > 65535 {
			return fmt.Errorf("port %d is out of range: choose another FAULTS_BASE_PORT", port)
		}
	}
	return nil
}
