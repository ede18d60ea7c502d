# Object storage for uploaded files, private and versioned.
resource "aws_s3_bucket" "uploads" {
  bucket = "shop-uploads"
}

resource "aws_s3_bucket_versioning" "uploads" {
  bucket = aws_s3_bucket.uploads.id
  versioning_configuration {
    status = "Enabled"
  }
}

variable "region" {
  default = "eu-west-1"
}
