// Package sample is what surface's tests measure: every count of it is
// known.
//
// Its package comment is four lines long.
package sample
