package awsworld

// DataJSON is dataJSON, for the package's external tests.
var DataJSON = dataJSON
