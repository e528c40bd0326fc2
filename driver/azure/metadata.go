package azure

import (
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"

	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/driver/internal/metadata"
)

// toAzure returns md as the SDK's metadata map, nil for none.
func toAzure(md driver.Metadata) map[string]*string {
	if len(md) == 0 {
		return nil
	}
	out := make(map[string]*string, len(md))
	for k, v := range md {
		out[k] = to.Ptr(v)
	}
	return out
}

// fromAzure returns the SDK's metadata map as driver.Metadata, its keys
// lowercased (Blob Storage returns them in the case they were set with;
// the SDK in the case net/http gives the header, "Epoch").
func fromAzure(m map[string]*string) driver.Metadata {
	out := make(map[string]string, len(m))
	for k, v := range m {
		if v != nil {
			out[k] = *v
		} else {
			out[k] = ""
		}
	}
	return metadata.Lower(out)
}
