module example.com/splitmerge

go 1.22
