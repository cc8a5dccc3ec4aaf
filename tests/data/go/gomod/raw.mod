module "example.com/raw"

go 1.21.0

toolchain go1.23.1

require example.com/a v1.0.0 // a comment, not indirect
