package workflow

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/cairn-go/cairn/worlds"
)

// DefaultVersion is the version [Version] returns to a run that went past the
// change point under code without it: the code before the change.
const DefaultVersion = -1

// AttrVersionPrefix starts the run attribute in which [Version] records the
// version a run chose for a change: "cairn.version." + changeID.
const AttrVersionPrefix = "cairn.version."

// ErrUnsupportedVersion: a run recorded a version of a change that the code no
// longer supports. Matched by *[VersionError].
var ErrUnsupportedVersion = errors.New("workflow: unsupported version")

// VersionError reports a run whose recorded version of a change lies outside
// what the code supports, because the code dropped the branch the run took.
type VersionError struct {
	RunID    string
	ChangeID string
	// Version is the run's version of the change: the recorded one, or
	// DefaultVersion for a run that went past the change point without it.
	Version  int
	Min, Max int
}

func (e *VersionError) Error() string {
	return fmt.Sprintf("workflow: run %s has version %d of change %q, code supports %d to %d",
		e.RunID, e.Version, e.ChangeID, e.Min, e.Max)
}

// Is matches [ErrUnsupportedVersion].
func (e *VersionError) Is(target error) bool { return target == ErrUnsupportedVersion }

// Version returns the version of the change changeID this run follows, so that
// code changed while runs are in flight can branch between the old and the new
// way:
//
//	v, err := workflow.Version(ctx, "add-fraud-check", workflow.DefaultVersion, 1)
//	if err != nil {
//		return err
//	}
//	if v >= 1 {
//		// the new step, only for runs that reach this point under the new code
//	}
//
// The first time a run reaches changeID, it gets maxSupported, recorded with
// the run's next write as the run attribute [AttrVersionPrefix]+changeID (an
// attributes_set event in its log), and every replay returns the recorded
// version. (A run that ends before writing again records nothing: no replay
// needs it.) A run whose log already goes past this point without a record — it
// ran here under code without the call — gets [DefaultVersion]: it keeps the
// path it took. Version takes no position among the run's operations, so
// adding a call to running code is itself safe.
//
// A version outside [minSupported, maxSupported] returns a *[VersionError]
// matching [ErrUnsupportedVersion]: raise minSupported only once no run that
// took an older branch is still in flight. Calling Version again for the same
// changeID in one run returns the same version.
func Version(ctx Context, changeID string, minSupported, maxSupported int) (int, error) {
	e, err := execOf(ctx)
	if err != nil {
		return DefaultVersion, err
	}
	e.enter()
	key := AttrVersionPrefix + changeID
	switch {
	case changeID == "":
		return DefaultVersion, &ConfigError{Field: "Version changeID", Value: `""`, Reason: "must not be empty"}
	case minSupported > maxSupported:
		return DefaultVersion, &ConfigError{Field: "Version minSupported", Value: minSupported, Reason: "greater than maxSupported " + strconv.Itoa(maxSupported)}
	case minSupported < DefaultVersion:
		return DefaultVersion, &ConfigError{Field: "Version minSupported", Value: minSupported, Reason: "below DefaultVersion (-1)"}
	}
	if err := worlds.ValidateAttributes(map[string]string{key: "0"}); err != nil {
		return DefaultVersion, &ConfigError{Field: "Version changeID", Value: changeID, Reason: err.Error()}
	}
	v, ok := e.hist.versions[changeID]
	switch {
	case ok:
	case e.hist.maxPos > e.pos || e.mode == modeCapture:
		// The log has operations past this point, made by code that did not call
		// Version here: the run keeps the old path. (Capture replays only the log,
		// whose operations were all recorded after any version the code chose.)
		v = DefaultVersion
	default:
		v = maxSupported
		e.hist.versions[changeID] = v
		e.marks = append(e.marks, worlds.Event{Type: worlds.EventAttributesSet, Attributes: map[string]string{key: strconv.Itoa(v)}})
	}
	if v < minSupported || v > maxSupported {
		return v, &VersionError{RunID: e.runID, ChangeID: changeID, Version: v, Min: minSupported, Max: maxSupported}
	}
	return v, nil
}

// versionsOf reads the version markers of an attributes_set event into versions
// (nil: only report whether there are any).
func versionsOf(attrs map[string]string, versions map[string]int) bool {
	found := false
	for k, val := range attrs {
		id, ok := strings.CutPrefix(k, AttrVersionPrefix)
		if !ok {
			continue
		}
		if v, err := strconv.Atoi(val); err == nil {
			if versions == nil {
				return true
			}
			versions[id] = v
			found = true
		}
	}
	return found
}
