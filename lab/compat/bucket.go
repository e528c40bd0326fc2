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
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"
	s3sdk "github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
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

// Outcomes of rawConditionalDelete and rawIfMatchPut.
const (
	IfMatchPutOK   = "accepted, quoted or bare"
	DeleteHonoured = "honoured: a wrong ETag is refused with 412, the right one deletes"
	DeleteIgnored  = "ignored: DELETE with a wrong If-Match removed the object"
)

// rawClient is an S3 client for s with its credentials, path-style.
func rawClient(s Server) *s3sdk.Client {
	region := s.Region
	if region == "" {
		region = "us-east-1"
	}
	return s3sdk.New(s3sdk.Options{
		Region:       region,
		BaseEndpoint: aws.String(s.Endpoint),
		UsePathStyle: true,
		Credentials:  credentials.NewStaticCredentialsProvider(s.AccessKey, s.SecretKey, ""),
	})
}

// rawIfMatchPut asks an S3 server directly how it takes If-Match on
// PutObject with the object's current ETag, quoted as RFC 9110 and the
// SDKs send it, and bare: both must succeed.
func rawIfMatchPut(ctx context.Context, s Server, bucket string) string {
	if s.Kind != KindS3 {
		return ""
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	c := rawClient(s)
	key := aws.String("compat-raw-put/" + randomHex(6))
	defer c.DeleteObject(context.WithoutCancel(ctx), &s3sdk.DeleteObjectInput{Bucket: aws.String(bucket), Key: key})
	try := func(quoted bool) (string, error) {
		put, err := c.PutObject(ctx, &s3sdk.PutObjectInput{Bucket: aws.String(bucket), Key: key, Body: strings.NewReader("x")})
		if err != nil {
			return "", err
		}
		etag := strings.Trim(aws.ToString(put.ETag), `"`)
		if quoted {
			etag = `"` + etag + `"`
		}
		_, err = c.PutObject(ctx, &s3sdk.PutObjectInput{Bucket: aws.String(bucket), Key: key, Body: strings.NewReader("y"), IfMatch: aws.String(etag)})
		if err == nil {
			return "accepted", nil
		}
		var re *awshttp.ResponseError
		if errors.As(err, &re) {
			return fmt.Sprintf("refused with %d", re.HTTPStatusCode()), nil
		}
		return "", err
	}
	q, err := try(true)
	if err != nil {
		return "not measured: " + evidence(err.Error())
	}
	b, err := try(false)
	if err != nil {
		return "not measured: " + evidence(err.Error())
	}
	if q == "accepted" && b == "accepted" {
		return IfMatchPutOK
	}
	return fmt.Sprintf("quoted current ETag %s; bare current ETag %s", q, b)
}

// rawConditionalDelete asks an S3 server directly, below the drivers
// (which declare a conditional delete only for AWS), whether it honours
// If-Match on DeleteObject: a made-up ETag must be refused with 412 and
// leave the object, the right one must delete it.
func rawConditionalDelete(ctx context.Context, s Server, bucket string) string {
	if s.Kind != KindS3 {
		return ""
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	c := rawClient(s)
	key := aws.String("compat-raw-delete/" + randomHex(6))
	defer c.DeleteObject(context.WithoutCancel(ctx), &s3sdk.DeleteObjectInput{Bucket: aws.String(bucket), Key: key})
	put, err := c.PutObject(ctx, &s3sdk.PutObjectInput{Bucket: aws.String(bucket), Key: key, Body: strings.NewReader("x")})
	if err != nil {
		return "not measured: PutObject: " + evidence(err.Error())
	}
	exists := func() (bool, error) {
		_, err := c.HeadObject(ctx, &s3sdk.HeadObjectInput{Bucket: aws.String(bucket), Key: key})
		var nf *s3types.NotFound
		if errors.As(err, &nf) {
			return false, nil
		}
		return err == nil, err
	}
	_, err = c.DeleteObject(ctx, &s3sdk.DeleteObjectInput{Bucket: aws.String(bucket), Key: key,
		IfMatch: aws.String(`"0123456789abcdef0123456789abcdef"`)})
	still, herr := exists()
	switch {
	case herr != nil:
		return "not measured: HeadObject: " + evidence(herr.Error())
	case err == nil && !still:
		return DeleteIgnored
	case err == nil:
		return "DELETE with a wrong If-Match answered success but left the object"
	case !still:
		return "DELETE with a wrong If-Match failed but removed the object: " + evidence(err.Error())
	}
	var re *awshttp.ResponseError
	if !errors.As(err, &re) || re.HTTPStatusCode() != http.StatusPreconditionFailed {
		return "DELETE with a wrong If-Match failed, not with 412: " + evidence(err.Error())
	}
	if _, err := c.DeleteObject(ctx, &s3sdk.DeleteObjectInput{Bucket: aws.String(bucket), Key: key, IfMatch: put.ETag}); err != nil {
		return "a wrong ETag is refused with 412, but the right one too: " + evidence(err.Error())
	}
	if still, _ := exists(); still {
		return "a wrong ETag is refused with 412; the right one answered success but left the object"
	}
	return DeleteHonoured
}
