module example.com/thirdpartydriver

go 1.26.0

require github.com/mushroomdb/bucketlease v0.0.0

replace github.com/mushroomdb/bucketlease => ../..
