# expect: aip-model-dir info -- reported on the package's first module: nothing tells the container where outputs go
