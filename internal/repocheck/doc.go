// Package repocheck holds tests over the repository's tracked files themselves,
// such as the absence of paths that exist only on one developer's machine. It has
// no API.
package repocheck
