// Package b holds helpers in another package: cairnvet does not follow calls into it.
package b

import "time"

// Stamp reads the clock; it is not workflow code, whoever calls it.
func Stamp() time.Time { return time.Now() }
