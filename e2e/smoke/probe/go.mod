module tfjob.test/smoke/probe

go 1.22
