package notests

func X() {}
