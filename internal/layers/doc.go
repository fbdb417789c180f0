// Package layers holds no code: its test keeps the table of layers in
// ARCHITECTURE.md true. The table places every package of the module in a
// numbered layer, lowest first; a package may import packages of its own
// layer or a lower one, never a higher one. The test reads the table and
// the module's imports (go list) and fails on a package the table does not
// place, on a row that places no package, and on an import that runs up.
package layers
