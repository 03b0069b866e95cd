// etcd's own main lives in a module (go.etcd.io/etcd/v3) that replaces its siblings with local
// directories, so it cannot be required; etcdmain is the same entry point from the server module.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
