package awsworld

// ViewData is viewData, for the package's external tests.
var ViewData = viewData
