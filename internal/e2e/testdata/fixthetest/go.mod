module example.com/fixthetest

go 1.22
