// Package azure is the Azure Blob Storage driver, built on
// github.com/Azure/azure-sdk-for-go/sdk/storage/azblob. Importing it
// registers the scheme "azblob":
//
//	azblob://CONTAINER/PREFIX?account=ACCOUNT
//	azblob://CONTAINER/PREFIX                 (account from the environment)
//	azblob://CONTAINER/PREFIX?endpoint=https://ACCOUNT.blob.core.windows.net
//
// opens the existing container CONTAINER; the lease lives under PREFIX.
// The parameters are account (default $AZURE_STORAGE_ACCOUNT) or endpoint;
// any other is refused. Credentials come from
// AZURE_STORAGE_CONNECTION_STRING, else the default Azure credential chain,
// never from the URL, and no error shows them.
//
// A Version is the blob's quoted ETag, sent as If-Match (IfAbsent as
// If-None-Match: *) on Put Blob and Delete Blob, so the driver declares
// Conditional exclusion and ConditionalDelete. docs/drivers.md ("azblob://
// — Azure Blob Storage") has the details.
package azure
