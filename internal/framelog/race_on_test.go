//go:build race

package framelog

// raceEnabled: the race detector's shadow memory inflates what a read
// allocates, so allocation bounds are not checked under it.
const raceEnabled = true
