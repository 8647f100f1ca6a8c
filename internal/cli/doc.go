// Package cli holds what cairn's command-line tools share: a progress line that
// appears only on a terminal and one-line error messages. It keeps commands
// pipeable: nothing decorative reaches a file or a pipe.
package cli
