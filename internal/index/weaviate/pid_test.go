package weaviate

import "os"

var testPID = os.Getpid()
