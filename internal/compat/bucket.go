package compat

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	s3sdk "github.com/aws/aws-sdk-go-v2/service/s3"
)

// createBucket makes the bucket (container) the run works in.
func createBucket(ctx context.Context, s Server, name string) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	switch s.Kind {
	case KindS3:
		region := s.Region
		if region == "" {
			region = "us-east-1"
		}
		c := s3sdk.New(s3sdk.Options{
			Region:       region,
			BaseEndpoint: aws.String(s.Endpoint),
			UsePathStyle: true,
			Credentials:  credentials.NewStaticCredentialsProvider(s.AccessKey, s.SecretKey, ""),
		})
		_, err := c.CreateBucket(ctx, &s3sdk.CreateBucketInput{Bucket: aws.String(name)})
		return err
	case KindAzure:
		c, err := container.NewClientFromConnectionString(s.ConnectionString, name, nil)
		if err != nil {
			// The SDK's message may quote the string.
			return errors.New("the connection string is not valid")
		}
		_, err = c.Create(ctx, nil)
		return err
	case KindGCS:
		// fake-gcs-server needs no credentials; the JSON API's bucket insert.
		body := strings.NewReader(fmt.Sprintf(`{"name":%q}`, name))
		req, err := http.NewRequestWithContext(ctx, http.MethodPost,
			strings.TrimRight(s.Endpoint, "/")+"/storage/v1/b?project="+url.QueryEscape("bucketlease-compat"), body)
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if resp.StatusCode/100 != 2 {
			msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
			return fmt.Errorf("bucket insert: %s: %s", resp.Status, oneLine(string(msg)))
		}
		return nil
	}
	return fmt.Errorf("unknown kind %q", s.Kind)
}
