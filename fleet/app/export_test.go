package app

// The suite starts more than one manager in its process.
func init() { skipNameValidation = true }
