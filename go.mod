module github.com/mushroomdb/bucketlease

go 1.26.8
