package config

import (
	"path/filepath"
	"strings"
)

// ExpandHome turns a leading "~/" into the home directory.
func ExpandHome(p string, getenv func(string) string) string {
	if strings.HasPrefix(p, "~/") {
		if home := getenv("HOME"); home != "" {
			return filepath.Join(home, p[2:])
		}
	}
	return p
}

// defaultDBPath is $XDG_DATA_HOME/crow-acp/crow.db, or
// ~/.local/share/crow-acp/crow.db; "" without a home directory.
func defaultDBPath(getenv func(string) string) string {
	if dir := getenv("XDG_DATA_HOME"); dir != "" && filepath.IsAbs(dir) {
		return filepath.Join(dir, "crow-acp", "crow.db")
	}
	if home := getenv("HOME"); home != "" {
		return filepath.Join(home, ".local", "share", "crow-acp", "crow.db")
	}
	return ""
}

// defaultConfigPath is $XDG_CONFIG_HOME/crow-acp/config.toml, or
// ~/.config/crow-acp/config.toml; "" without a home directory.
func defaultConfigPath(getenv func(string) string) string {
	if dir := getenv("XDG_CONFIG_HOME"); dir != "" && filepath.IsAbs(dir) {
		return filepath.Join(dir, "crow-acp", "config.toml")
	}
	if home := getenv("HOME"); home != "" {
		return filepath.Join(home, ".config", "crow-acp", "config.toml")
	}
	return ""
}
