package sample

// Platform, Info and Info.OS are declared for Linux here and for other
// systems in platform_other.go: they count once.
func Platform() Info { return Info{OS: "linux"} }

// Info names the system.
type Info struct{ OS string }
