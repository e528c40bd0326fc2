package azure_test

import (
	"context"
	"fmt"

	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/driver/azure"
	"github.com/mushroomdb/bucketlease/internal/location"
)

// Opening by URL: importing the package registers azblob://. Opening sends
// no request. (Credentials come from AZURE_STORAGE_CONNECTION_STRING if it is
// set, else the default Azure credential chain.)
func Example_open() {
	b, prefix, err := location.Open(context.Background(), "azblob://backups/db1?account=mystorageaccount")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(prefix, b.Capabilities().Exclusion, b.Capabilities().ConditionalDelete)
}

// With a container client of your own, configured as you like.
func ExampleNew() {
	cred, err := azidentity.NewDefaultAzureCredential(nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	c, err := container.NewClient("https://mystorageaccount.blob.core.windows.net/backups", cred, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	b := azure.New(c)
	put, err := b.Put(context.Background(), "db1/LEASE", []byte("{}"), driver.PutOptions{If: driver.IfAbsent()})
	v := put.Version
	fmt.Println(v, err)
}
