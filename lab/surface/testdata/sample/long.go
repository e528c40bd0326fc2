package sample

// Long is 12 lines long, from func to its brace;
// a raw string of two lines counts twice as code.
func Long() int {
	n := 0
	n += 1
	n += 2
	n += 3
	n += 4
	n += 5
	n += 6
	n += 7
	n += 8
	return n
}

func short() string {
	return `one
two`
}
