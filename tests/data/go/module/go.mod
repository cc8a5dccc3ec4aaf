module example.com/rec

go 1.19
