// A small static executable standing in for sporectl where a test needs
// only an ELF the builder accepts, not sporectl itself.
package main

func main() {}
