! Small dense matrix helpers.
module matrix
  implicit none
contains
  ! Multiply two square matrices with explicit loops.
  subroutine matmul_square(a, b, c, n)
    integer, intent(in) :: n
    real, intent(in) :: a(n, n), b(n, n)
    real, intent(out) :: c(n, n)
    integer :: i, j, k
    c = 0.0
    do j = 1, n
      do k = 1, n
        do i = 1, n
          c(i, j) = c(i, j) + a(i, k) * b(k, j)
        end do
      end do
    end do
  end subroutine matmul_square
end module matrix
