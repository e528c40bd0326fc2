// Package azure is the Azure Blob Storage driver, built on
// github.com/Azure/azure-sdk-for-go/sdk/storage/azblob. Importing it
// registers the scheme "azblob":
//
//	azblob://CONTAINER/PREFIX?account=ACCOUNT
//	azblob://CONTAINER/PREFIX                 (account from the environment)
//	azblob://CONTAINER/PREFIX?endpoint=https://ACCOUNT.blob.core.windows.net
//
// opens container CONTAINER; the lease lives under PREFIX. The container
// must exist. Objects are block blobs. The parameters are account (default
// $AZURE_STORAGE_ACCOUNT) and endpoint (a sovereign cloud, a private
// endpoint or an emulator such as Azurite), not both; any other is refused.
//
// A URL never carries credentials. They come from
// AZURE_STORAGE_CONNECTION_STRING, else the default Azure credential chain
// (azidentity.NewDefaultAzureCredential). No error of this package
// contains the connection string or a key. To configure the client some
// other way, build a *container.Client and pass it to [New].
//
// A Version is the blob's ETag, quoted as the service returns it. IfAbsent
// is sent as If-None-Match: * and IfMatch as If-Match, on one Put Blob
// request, and Delete Blob honours If-Match, so the driver declares
// Exclusion Conditional and ConditionalDelete. Errors are classified by the
// service's error code, not the status alone. [Bucket.PutStream] stages
// blocks and commits them with one conditional Put Block List. It needs no
// Close.
//
// docs/drivers.md ("azblob:// — Azure Blob Storage") has the details:
// credentials, how the service's errors and the SDK's retries map, block
// IDs, what a failed streamed write leaves, and Azurite's quirks.
package azure
