//go:build !race

package framelog

const raceEnabled = false
