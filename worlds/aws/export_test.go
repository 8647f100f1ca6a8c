package awsworld

// DataJSON and ItemSize are dataJSON and itemSize, for the package's external
// tests.
var (
	DataJSON = dataJSON
	ItemSize = itemSize
)
